"""Simulated nodes for the demo, the tests and the benchmarks: trees a real node would have, under a root.

Nothing here reads the real machine; the trees are read through the real probe and parsers."""
