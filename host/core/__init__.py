"""Pure text helpers every app shares: no Django imports, easy to test and reuse."""
