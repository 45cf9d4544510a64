#!/usr/bin/env python3
"""A real SMTP server for Pier's tests (Debian's python3-aiosmtpd): every message it accepts
is written as an .eml file (the envelope in X-Envelope-* headers first); AUTH LOGIN/PLAIN is
required when --user is given; recipients listed in --reject get 550 (a refusal for good);
with --tls-cert and --tls-key, STARTTLS is offered and required before anything else.
Prints "ready" once it listens; stops when its standard input closes or on SIGTERM."""
import argparse
import os
import signal
import ssl
import sys
import time
import uuid

from aiosmtpd.controller import Controller
from aiosmtpd.smtp import AuthResult, LoginPassword


class Saver:
    def __init__(self, directory, reject):
        self.directory = directory
        self.reject = set(reject)

    async def handle_RCPT(self, server, session, envelope, address, rcpt_options):
        if address in self.reject:
            return "550 5.1.1 No such mailbox"
        envelope.rcpt_tos.append(address)
        return "250 OK"

    async def handle_DATA(self, server, session, envelope):
        name = "%d-%s.eml" % (time.time() * 1000, uuid.uuid4().hex[:8])
        head = "X-Envelope-From: %s\r\nX-Envelope-To: %s\r\n" % (envelope.mail_from, ",".join(envelope.rcpt_tos))
        temporary = os.path.join(self.directory, "." + name)
        with open(temporary, "wb") as file:
            file.write(head.encode() + envelope.original_content)
        os.rename(temporary, os.path.join(self.directory, name))
        return "250 Message accepted for delivery"


def main():
    # A Swift test process starts this from a thread that blocks signals, and the mask is
    # inherited: without this, the test's SIGTERM would wait forever.
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM, signal.SIGINT})
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--directory", required=True)
    parser.add_argument("--user")
    parser.add_argument("--password")
    parser.add_argument("--reject", action="append", default=[])
    parser.add_argument("--tls-cert")
    parser.add_argument("--tls-key")
    options = parser.parse_args()

    def authenticator(server, session, envelope, mechanism, auth_data):
        ok = (
            isinstance(auth_data, LoginPassword)
            and auth_data.login.decode() == options.user
            and auth_data.password.decode() == options.password
        )
        # Not "handled": aiosmtpd then answers a refusal with 535, as a real server does.
        return AuthResult(success=ok, handled=False)

    settings = {}
    if options.user:
        settings = dict(authenticator=authenticator, auth_required=True, auth_require_tls=bool(options.tls_cert))
    if options.tls_cert:
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        context.load_cert_chain(options.tls_cert, options.tls_key)
        settings.update(tls_context=context, require_starttls=True)
    controller = Controller(
        Saver(options.directory, options.reject), hostname="127.0.0.1", port=options.port, **settings
    )
    controller.start()
    print("ready", flush=True)
    try:
        sys.stdin.read()
    finally:
        controller.stop()


if __name__ == "__main__":
    main()
