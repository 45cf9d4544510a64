"""Checks pier-auth's tokens with PyJWT, an independent implementation: a token verifies
against the published JWKS with ES256, issuer and audience pinned; any alteration fails."""
import base64
import json
import sys
import urllib.request
import uuid

import jwt
from cryptography.hazmat.primitives.asymmetric import ec

base = sys.argv[1]


def call(method, path, body=None, token=None):
    request = urllib.request.Request(base + path, method=method, data=json.dumps(body).encode() if body else None)
    request.add_header("Content-Type", "application/json")
    if token:
        request.add_header("Authorization", "Bearer " + token)
    try:
        with urllib.request.urlopen(request) as response:
            return response.status, json.loads(response.read() or b"null")
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read() or b"null")


def b64(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


status, session = call("POST", "/auth/register", {"email": f"interop-{uuid.uuid4()}@example.com", "password": "interop passphrase"})
assert status == 201, (status, session)
token = session["accessToken"]
_, jwks = call("GET", "/auth/.well-known/jwks.json")
keys = {key["kid"]: jwt.algorithms.ECAlgorithm.from_jwk(json.dumps(key)) for key in jwks["keys"]}
kid = jwt.get_unverified_header(token)["kid"]
claims = jwt.decode(token, keys[kid], algorithms=["ES256"], audience="pier", issuer="pier")
assert claims["sub"].lower() == session["user"]["id"].lower(), claims
assert jwt.get_unverified_header(token)["typ"] == "at+jwt"

header, payload, signature = token.split(".")
def claims_with(**changes):
    body = json.loads(base64.urlsafe_b64decode(payload + "=="))
    body.update(changes)
    return b64(json.dumps(body).encode())

other_key = ec.generate_private_key(ec.SECP256R1())
altered = {
    "role raised": f"{header}.{claims_with(role='admin')}.{signature}",
    "subject changed": f"{header}.{claims_with(sub=str(uuid.uuid4()))}.{signature}",
    "expiry extended": f"{header}.{claims_with(exp=4102444800)}.{signature}",
    "signature bit flipped": f"{header}.{payload}.{signature[:-2]}{'A' if signature[-2] != 'A' else 'B'}{signature[-1]}",
    "alg none": f"{b64(json.dumps({'alg': 'none', 'kid': kid}).encode())}.{payload}.",
    "signed by another key": jwt.encode(jwt.decode(token, options={"verify_signature": False}), other_key, algorithm="ES256",
                                        headers={"kid": kid, "typ": "at+jwt"}),
}
for name, forged in altered.items():
    try:
        jwt.decode(forged, keys[kid], algorithms=["ES256"], audience="pier", issuer="pier")
    except jwt.PyJWTError:
        pass
    else:
        raise AssertionError(f"PyJWT accepted an altered token: {name}")
    status, _ = call("GET", "/auth/me", token=forged)
    assert status == 401, (name, status)
status, me = call("GET", "/auth/me", token=token)
assert status == 200 and me["id"] == session["user"]["id"]

# The admin made by `pier-auth create-admin` logs in with the admin role in its token.
status, admin = call("POST", "/auth/login", {"email": "admin@example.com", "password": "interop admin passphrase"})
assert status == 200 and admin["user"]["role"] == "admin", (status, admin)
admin_claims = jwt.decode(admin["accessToken"], keys[kid], algorithms=["ES256"], audience="pier", issuer="pier")
assert admin_claims["role"] == "admin", admin_claims
# A password alone: RFC 8176's `pwd`, assurance level 1; the admin role needs a second factor,
# so the team's routes refuse the token until the admin sets one up.
assert admin_claims["amr"] == ["pwd"] and admin_claims["acr"] == "aal1", admin_claims
assert admin_claims["mfa_enrolment_required"] is True, admin_claims
status, refused = call("GET", "/auth/users?q=admin", token=admin["accessToken"])
assert status == 403 and refused["code"] == "mfa_enrolment_required", (status, refused)
print(f"interop: PyJWT {jwt.__version__} verified the token and refused {len(altered)} alterations; so did pier-auth")
