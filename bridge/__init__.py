"""bridge: the ZeroMQ link between a plant and a controller.

protocol.py (wire format v2 and its one decoder, docs/PROTOCOL.md), server.py (PlantServer:
serves a plant), client.py (ControllerClient: runs a controller against it), security.py
(loopback or CurveZMQ; ZAP on every plant socket), fuzz.py (hostile messages for tests and
benches), examples/ (a controller using only pyzmq and numpy). See docs/ARCHITECTURE.md.
"""
