# moto's S3 server with each object write, delete and multipart step made atomic.
#
# moto checks a conditional write (`If-None-Match: *`, `If-Match`) and then stores
# the object, with no lock between the two, in a threaded server: under load two
# writers of one key can both pass the check (seen on CI: 2 of 16 create-if-absent
# writers answered 200). Real S3 never does that, and a lease in the bucket relies
# on it. This runs moto's own server with its key PUT, DELETE and POST handlers
# under one lock. Each handler runs after the request body is read (setup_class),
# so a slow or stalled client never holds the lock.
import functools
import threading

from moto.s3.responses import S3Response
from moto.server import main

_writes = threading.Lock()


def _atomic(handler):
    @functools.wraps(handler)
    def locked(*args, **kwargs):
        with _writes:
            return handler(*args, **kwargs)

    return locked


for _name in ("_key_response_put", "_key_response_delete", "_key_response_post"):
    setattr(S3Response, _name, _atomic(getattr(S3Response, _name)))

if __name__ == "__main__":
    main()
