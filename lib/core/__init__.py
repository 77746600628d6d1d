"""The base layer: what a chapter is (its source and parameters), the profiles that set them, and where results are
stored. Everything else in lib may import it; it imports only lib's base modules."""
