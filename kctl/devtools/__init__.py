"""Developer tools: man pages and shell completions generated from the click tree."""
