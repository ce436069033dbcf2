"""Memory: scopes, observations, formation, consolidation, propagation, rebuild."""
