"""secure_bloom."""
