"""The newest link a mail to ADDRESS carries whose path contains FRAGMENT, printed once it was
written: for the scripts that go through a mailed link as its reader would (the approval of a
team member's first second factor, say). MAIL is a folder searched recursively: .eml files
(auth without SMTP) and a maildir's messages (an SMTP server's) alike. Waits up to 30 s.

Usage: python3 mailed_link.py MAIL ADDRESS FRAGMENT
"""
import email
import email.policy
import os
import re
import sys
import time

folder, address, fragment = sys.argv[1], sys.argv[2], sys.argv[3]


def newest():
    found = []
    for root, _, names in os.walk(folder):
        for name in names:
            path = os.path.join(root, name)
            try:
                with open(path, "rb") as file:
                    message = email.message_from_binary_file(file, policy=email.policy.default)
                if address not in (message["To"] or ""):
                    continue
                text = message.get_body(("plain",)).get_content()
            except (OSError, AttributeError, KeyError, ValueError):
                continue
            for link in re.findall(r"https?://[^\s\"<>]+", text):
                if fragment in link:
                    found.append((os.path.getmtime(path), link))
    return max(found)[1] if found else None


deadline = time.monotonic() + 30
link = newest()
while link is None and time.monotonic() < deadline:
    time.sleep(0.2)
    link = newest()
if link is None:
    sys.exit("no mail to %s with a link to %s under %s" % (address, fragment, folder))
print(link)
