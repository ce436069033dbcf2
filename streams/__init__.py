"""The memory domain: scopes, observations, formation, consolidation, propagation, context.

Plain functions and small classes over one persistence package (`streams.store`).
Nothing here imports Django's HTTP layer, ninja, templates or `memory_admin`.
"""
