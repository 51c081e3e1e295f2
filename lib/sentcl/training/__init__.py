"""The training loop every chapter uses."""
