"""Running investigations: the batch runner, its accounts, the compile cache's transfer, the bundle, the scaffold."""
