"""TFLite-exact integer arithmetic helpers."""
