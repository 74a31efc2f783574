"""Lecture decks: an ordered list of the app's own views (share links) with titles and speaker notes, and their working copies on disk."""
