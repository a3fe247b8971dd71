package mdata

import "github.com/seedkeeper/seedkeeper/mdata/internal/wire"

func frameBytes(id, code string, payload []byte) []byte {
	return wire.Frame{RequestID: id, Code: code, Payload: payload}.Append(nil)
}
