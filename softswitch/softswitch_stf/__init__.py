"""softswitch-stf: p4c's STF packet tests on the built-in target (see README.md)."""
