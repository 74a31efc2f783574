"""Word-level attention (issue 15): word pieces merged into words."""
