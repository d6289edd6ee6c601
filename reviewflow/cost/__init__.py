"""What a review will cost and what it may spend: prices, estimates, the budget's settings."""
