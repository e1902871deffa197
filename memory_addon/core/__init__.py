"""Pure memory logic: no Django imports, so it is easy to test and reuse from the CLI."""
