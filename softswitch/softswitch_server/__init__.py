"""P4Runtime gRPC server for aqmlab's built-in software switch (softswitch)."""
