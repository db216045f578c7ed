def fibonacci(n):
    """Return the n-th Fibonacci number (fibonacci(0) == 0)."""
