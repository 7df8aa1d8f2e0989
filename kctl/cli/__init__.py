"""The click command tree. Thin: parse, call one kctl.admin function, render."""
