"""Remote execution: run an artifact compiled here on another machine, as TVM's RPC does.

It sits beside the runtime, after the artifact is built: a server (`relaxrun --serve`)
on the device takes uploads, loads them with the runtime's loader and runs them; a
client (`relaxrun --remote`, or this API) uploads, calls and times them from here.

    framing.py          the wire format: greeting, length-prefixed messages, limits
    auth.py             the HMAC challenge-response over a shared key, TLS contexts
    values.py           VM values on the wire (tensors as .npy bytes, never pickle)
    server.py           the accept loop, a thread per session, the artifact store
    server_session.py   one session: handshake, requests, clean-up, the log line
    server_requests.py  the answer to each request
    client.py           connect(): a Session with upload, load_module, cpu
    remote_vm.py        the VirtualMachine of a remote module
    serve_main.py       relaxrun --serve
    tracker_pool.py     the tracker's queue of servers per device key
    tracker.py          the tracker: lends one free server to each client
    tracker_client.py   connect_tracker(): request a server; a server's registration
    tracker_main.py     relaxrun --tracker-serve, --tracker-status

Like the runtime, it never imports the compiler. docs/rpc.md specifies the messages.
"""

from .client import RemoteDevice, RemoteError, RemoteModule, Session, connect
from .server import Server, ServerConfig
from .tracker import Tracker, TrackerConfig
from .tracker_client import TrackerClient, connect_tracker

__all__ = ["RemoteDevice", "RemoteError", "RemoteModule", "Server", "ServerConfig", "Session", "Tracker",
           "TrackerClient", "TrackerConfig", "connect", "connect_tracker"]
