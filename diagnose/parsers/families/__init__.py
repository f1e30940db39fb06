"""Line families any kind may carry: CANN error blocks, Python tracebacks, out-of-memory numbers."""
