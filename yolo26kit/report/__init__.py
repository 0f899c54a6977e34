"""The pages: a run's page and the index over runs, notebook pages, answers, conclusions, the single file to send."""
