"""The Communicator's channels besides the console and messages.md: webhooks and commands."""

from communicator.channels.deliver import Channels, id_marker, open_channels
from communicator.channels.envelope import Envelope, envelope_of, message_id

__all__ = ["Channels", "Envelope", "envelope_of", "id_marker", "message_id", "open_channels"]
