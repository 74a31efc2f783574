"""Head atlas: every head over a corpus."""
