package controller

import (
	"encoding/json"
	"fmt"
)

func jsonMarshal(v any) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("marshal patch: %w", err)
	}
	return b, nil
}
