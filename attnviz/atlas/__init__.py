"""Head atlas: every head over a corpus (issue 15)."""
