// Package eastwest is what the controller knows of an exporting member's
// east-west gateway, pure: which listener an exported port gets (Kind,
// ListenerName), and what the importers of other networks get of the
// gateway as read there (Read): its addresses while it is Programmed, and
// per export the port of each listener of the controller's ListenerSet
// that the gateway accepted and programmed. Everything read is the
// member's word: a listener of another ListenerSet, of another parent, or
// of another port than the one of its name is not used.
package eastwest
