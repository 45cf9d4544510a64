// Every test that stands on the support stands on the basics too (waiting for a condition,
// log lines, ports, the SMTP server): one import gives both.
@_exported import PierTestBasics
