"""anteroom_connector: WSGI and ASGI middleware that let a request through
only with a valid anteroom admission token of one sale, verified offline
with the node's published keys (JWKS). See README.md."""

from .asgi import AnteroomASGI
from .keys import Keys, KeysUnavailable
from .verify import (JWKS_PATH, Admission, Config, InvalidAdmission, Verifier, admission_cookie,
                     safe_return)
from .wsgi import AnteroomWSGI

__all__ = ["AnteroomASGI", "AnteroomWSGI", "Admission", "Config", "InvalidAdmission", "JWKS_PATH", "Keys",
           "KeysUnavailable", "Verifier", "admission_cookie", "safe_return"]
