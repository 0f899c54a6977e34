"""`yolo26kit matrix`: the same claims across software stacks (the plan, the stacks, the executors that run cells)."""
