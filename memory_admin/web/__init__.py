"""Site-wide HTTP plumbing: middleware, large-request slots, the security header, login throttle."""
