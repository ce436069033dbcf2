"""The Redis broker transport: kombu's, except that losing Redis never ends the worker.

When the worker's connection to Redis breaks, Celery collects the broken connection
(which forgets its address) and then closes it; closing the channel gives the messages
the worker holds unacknowledged (`acks_late`: the jobs it is running) back to Redis
through that connection, and kombu, with no address left, raises AttributeError: not a
connection error, so the worker stops with "Unrecoverable error" and nothing runs any
job until someone starts it again. The multi-host rehearsal left 16 of 28 formation
jobs queued that way (docs/rehearsal.md; tests/integration/test_broker_restart.py).

Here a channel whose connection has gone raises a connection error instead, which
Celery recovers from (it reconnects): for that give-back, and for the acknowledgement
of a job that finishes after the reconnect. Nothing is lost: the messages are still in
Redis's unacknowledged set if Redis kept them (it hands them out again after the
visibility timeout), and the job documents are the durable record either way (the
recovery sweep, `retry_failed_jobs`, sends a job again whatever the broker lost).
Selected by CELERY_BROKER_TRANSPORT for a `redis://` or `rediss://` broker
(memory_admin/settings/celery.py).
"""

from __future__ import annotations

from kombu.transport import redis
from redis.exceptions import ConnectionError


class Channel(redis.Channel):
    def _create_client(self, asynchronous: bool = False):
        """A client, or a connection error (one the worker recovers from) when this
        channel's connection has been closed: never the AttributeError of its address."""
        if self.connection is None or self.connection.client is None:
            raise ConnectionError("the broker connection of this channel is closed")
        return super()._create_client(asynchronous)


class Transport(redis.Transport):
    Channel = Channel
