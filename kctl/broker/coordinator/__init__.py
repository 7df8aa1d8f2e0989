"""Consumer group coordinator (classic protocol), committed offsets and producer ids."""
