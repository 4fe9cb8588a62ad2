"""How ``rootbound serve`` talks to hosts: stdio on the event loop, Streamable HTTP with its bearer token and
Host/Origin checks, and answering messages nested too deeply to parse."""
