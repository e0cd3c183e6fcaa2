// CLI tests: written next.
