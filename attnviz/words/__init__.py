"""Word-level attention: word pieces merged into words."""
