package mcp

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

func TestMessageIDJSON(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in      string
		want    messageID
		wantErr bool
	}{
		{in: `12`, want: 12},
		{in: `"12"`, want: 12},
		{in: `" 12 "`, want: 12},
		{in: `"message 12"`, want: 12},
		{in: `"Message 12"`, want: 12},
		{in: `"#12"`, want: 12},
		{in: `"message #12"`, want: 12},
		{in: `9007199254740993`, want: 9007199254740993}, // above 2^53: no float rounding
		{in: `0`, wantErr: true},
		{in: `-1`, wantErr: true},
		{in: `"-1"`, wantErr: true},
		{in: `"abc"`, wantErr: true},
		{in: `""`, wantErr: true},
		{in: `"message"`, wantErr: true},
		{in: `"12abc"`, wantErr: true},
		{in: `1.5`, wantErr: true},
		{in: `true`, wantErr: true},
		{in: `[12]`, wantErr: true},
		{in: `{"id":12}`, wantErr: true},
	}
	for _, tt := range tests {
		var args struct {
			ID messageID `json:"message_id"`
		}
		err := json.Unmarshal([]byte(`{"message_id":`+tt.in+`}`), &args)
		if tt.wantErr {
			var in *argError
			if !errors.As(err, &in) {
				t.Errorf("decode message_id %s = %d, %v; want an *argError", tt.in, args.ID, err)
			} else if !strings.Contains(in.msg, "message_id must be a message number") {
				t.Errorf("decode message_id %s error = %q, want it to explain message_id", tt.in, in.msg)
			}
			continue
		}
		if err != nil || args.ID != tt.want {
			t.Errorf("decode message_id %s = %d, %v; want %d, nil", tt.in, args.ID, err, tt.want)
		}
	}
}
