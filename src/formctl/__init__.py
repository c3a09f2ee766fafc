"""formctl: run conversational forms in a terminal."""
