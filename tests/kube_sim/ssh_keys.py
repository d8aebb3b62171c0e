"""The SSH key pair mpi-operator and Kubeflow Trainer's MPI plugin put in an MPI job's Secret.

Both generate an ECDSA P-521 key and store it as a `kubernetes.io/ssh-auth` Secret: the private
key PEM-encoded (`EC PRIVATE KEY`, x509.MarshalECPrivateKey) under `ssh-privatekey`, the public
key in authorized_keys form (ssh.MarshalAuthorizedKey) under `ssh-publickey`
(kubeflow/mpi-operator v0.6.0 pkg/controller/mpi_job_controller.go newSSHAuthSecret;
kubeflow/trainer v2.3.0 pkg/runtime/framework/plugins/mpi/mpi.go buildSSHAuthSecret). Written here
with the standard library only (the curve arithmetic of SEC 2 secp521r1), so an image's sshd
would accept the pair.
"""

from __future__ import annotations

import base64
import secrets
import struct

#: SEC 2 v2, 2.6.1 secp521r1: the field prime, the order and the base point.
P = 2**521 - 1
N = int("01" + "f" * 65 + "a51868783bf2f966b7fcc0148f709a5d03bb5c9b8899c47aebb6fb71e91386409", 16)
A = P - 3
G = (
    int(
        "00c6858e06b70404e9cd9e3ecb662395b4429c648139053fb521f828af606b4d3dbaa14b5e77efe75928fe1dc127a2ffa8de3348b3c1856a429bf97e7e31c2e5bd66",
        16,
    ),
    int(
        "011839296a789a3bc0045c8a5fb42c7d1bd998f54449579b446817afbd17273e662c97ee72995ef42640c550b9013fad0761353c7086a272c24088be94769fd16650",
        16,
    ),
)
#: The OID 1.3.132.0.35 (secp521r1), DER-encoded.
CURVE_OID = bytes.fromhex("06052b81040023")
SIZE = 66  # bytes of a coordinate or scalar


def _add(p: tuple[int, int] | None, q: tuple[int, int] | None) -> tuple[int, int] | None:
    if p is None:
        return q
    if q is None:
        return p
    if p[0] == q[0] and (p[1] + q[1]) % P == 0:
        return None
    if p == q:
        slope = (3 * p[0] * p[0] + A) * pow(2 * p[1], -1, P) % P
    else:
        slope = (q[1] - p[1]) * pow(q[0] - p[0], -1, P) % P
    x = (slope * slope - p[0] - q[0]) % P
    return x, (slope * (p[0] - x) - p[1]) % P


def public_point(d: int) -> tuple[int, int]:
    result: tuple[int, int] | None = None
    addend: tuple[int, int] | None = G
    while d:
        if d & 1:
            result = _add(result, addend)
        addend = _add(addend, addend)
        d >>= 1
    assert result is not None
    return result


def _der(tag: int, body: bytes) -> bytes:
    if len(body) < 0x80:
        return bytes([tag, len(body)]) + body
    length = len(body).to_bytes((len(body).bit_length() + 7) // 8, "big")
    return bytes([tag, 0x80 | len(length)]) + length + body


def _ssh_string(data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + data


def key_pair() -> tuple[bytes, bytes]:
    """(private key PEM, public key `ecdsa-sha2-nistp521 <base64>\\n`)."""
    d = secrets.randbelow(N - 1) + 1
    x, y = public_point(d)
    point = b"\x04" + x.to_bytes(SIZE, "big") + y.to_bytes(SIZE, "big")
    # RFC 5915 ECPrivateKey: version 1, the scalar, [0] the curve, [1] the public point
    der = _der(
        0x30,
        _der(0x02, b"\x01")
        + _der(0x04, d.to_bytes(SIZE, "big"))
        + _der(0xA0, CURVE_OID)
        + _der(0xA1, _der(0x03, b"\x00" + point)),
    )
    lines = [base64.b64encode(der)[i : i + 64] for i in range(0, len(base64.b64encode(der)), 64)]
    pem = b"-----BEGIN EC PRIVATE KEY-----\n" + b"\n".join(lines) + b"\n-----END EC PRIVATE KEY-----\n"
    blob = _ssh_string(b"ecdsa-sha2-nistp521") + _ssh_string(b"nistp521") + _ssh_string(point)
    return pem, b"ecdsa-sha2-nistp521 " + base64.b64encode(blob) + b"\n"


def ssh_auth_secret(name: str, owner: list[dict], labels: dict[str, str] | None = None) -> dict:
    """The Secret (data base64-encoded, as the API carries it)."""
    private, public = key_pair()
    secret: dict = {
        "metadata": {"name": name, "ownerReferences": owner},
        "type": "kubernetes.io/ssh-auth",
        "data": {
            "ssh-privatekey": base64.b64encode(private).decode(),
            "ssh-publickey": base64.b64encode(public).decode(),
        },
    }
    if labels:
        secret["metadata"]["labels"] = labels
    return secret
