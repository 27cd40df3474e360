"""A scripted stand-in host-core for the reference client's tests.

    python fake_hostcore.py SCENARIO LOG

Every line received is logged to LOG (method, id and byte length; never the
payload) so a test can see what the client wrote. Scenarios:

* ``ok`` -- a correct handshake; every call answered with {"echo": method};
* ``mismatch`` / ``a2a`` / ``refuse`` -- a handshake answer the client must reject;
* ``overload-N`` -- the first N answers to non-handshake calls are -32029;
* ``tool-overload-N`` -- the same as a tools.execute result with errorCode HOST_OVERLOADED;
* ``internal`` -- every non-handshake call is answered with INTERNAL;
* ``silent`` -- non-handshake calls are never answered.
"""

from __future__ import annotations

import json
import sys


def answer(scenario: str, message: dict[str, object], served: int) -> dict[str, object] | None:
    rid = message.get("id")
    if message.get("method") == "app.handshake":
        result: dict[str, object] = {
            "protocolVersion": 10 if scenario == "mismatch" else 11,
            "host": "rust-host-core",
            "hostVersion": "fake",
            "features": [],
            "capabilities": ["a2a"] if scenario == "a2a" else [],
        }
        if scenario == "refuse":
            error = {"code": 1011, "message": "no", "data": {"errorCode": "PROTOCOL_MISMATCH"}}
            return {"jsonrpc": "2.0", "id": rid, "error": error}
        return {"jsonrpc": "2.0", "id": rid, "result": result}
    if scenario == "silent":
        return None
    if scenario == "internal":
        return {
            "jsonrpc": "2.0",
            "id": rid,
            "error": {"code": 1000, "message": "boom", "data": {"errorCode": "INTERNAL"}},
        }
    if scenario.startswith("overload-") and served < int(scenario.rsplit("-", 1)[1]):
        error = {"code": -32029, "message": "busy", "data": {"errorCode": "HOST_OVERLOADED"}}
        return {"jsonrpc": "2.0", "id": rid, "error": error}
    if scenario.startswith("tool-overload-") and served < int(scenario.rsplit("-", 1)[1]):
        result = {"toolCallId": "c", "ok": False, "isError": True, "errorCode": "HOST_OVERLOADED", "content": {}}
        return {"jsonrpc": "2.0", "id": rid, "result": result}
    return {"jsonrpc": "2.0", "id": rid, "result": {"echo": message.get("method")}}


def main() -> None:
    scenario, log_path = sys.argv[1], sys.argv[2]
    served = 0
    with open(log_path, "a", encoding="utf-8") as log:
        for line in sys.stdin.buffer:
            message = json.loads(line)
            log.write(json.dumps({"method": message.get("method"), "id": message.get("id"), "bytes": len(line)}) + "\n")
            log.flush()
            reply = answer(scenario, message, served)
            if message.get("method") != "app.handshake":
                served += 1
            if reply is not None:
                sys.stdout.write(json.dumps(reply) + "\n")
                sys.stdout.flush()


if __name__ == "__main__":
    main()
