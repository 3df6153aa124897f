package aggregate

import "unicode/utf8"

// MaxConditionMessageBytes bounds the message of a ServiceExport's
// condition, as the controller writes it and as it caches any: the API
// allows 32 KiB, and a member's exports are cached whole otherwise.
const MaxConditionMessageBytes = 4 << 10

// CutMark ends a message CutMessage cut.
const CutMark = " [cut]"

// CutMessage returns msg, or when it is longer than
// MaxConditionMessageBytes its start (whole UTF-8 characters) and CutMark
// within that length. Cutting again changes nothing, so what the
// controller writes is what it reads back.
func CutMessage(msg string) string {
	if len(msg) <= MaxConditionMessageBytes {
		return msg
	}
	n := MaxConditionMessageBytes - len(CutMark)
	for n > 0 && !utf8.RuneStart(msg[n]) {
		n--
	}
	return msg[:n] + CutMark
}
