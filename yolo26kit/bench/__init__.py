"""What investigations measure with: isolated steps, timing, graphs, the YOLO model, exports and their caches."""
