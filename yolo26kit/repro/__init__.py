"""`yolo26kit repro`: a standalone script, an upstream report and a clean-environment run for each finding."""
