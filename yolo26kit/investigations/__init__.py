"""One module per investigation; each registers itself with the catalog when imported."""
