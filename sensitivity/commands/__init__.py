"""The sub-commands of `sensitivity`, one module per group; each has `add_parsers(commands)`."""
