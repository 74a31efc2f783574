"""What attention moves: value-weighted attention, mixing ratios and ALTI."""
