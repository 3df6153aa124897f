package workload

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// MaxErrorBody is the most bytes of an error response's body (a refusal,
// a server error) read from a workload cluster's API server. Its message
// is then cut again where it is kept (kubeclient.Cut); this bound is on
// what one answer costs before that, whatever MaxResponseBytes allows a
// list page.
const MaxErrorBody = 64 << 10

// cutErrorBody reads resp, an answer of HTTP 400 or more, into memory up
// to MaxErrorBody. A longer one is not read: it is replaced with a Status
// of the same code, which client-go turns into the same kind of error
// (apierrors.NewGenericServerResponse's reason for the code), saying that
// the body was too large.
func cutErrorBody(req *http.Request, resp *http.Response) (*http.Response, error) {
	body, err := io.ReadAll(io.LimitReader(resp.Body, MaxErrorBody+1))
	_ = resp.Body.Close()
	if err != nil {
		return nil, fmt.Errorf("%s %s: read HTTP %d answer: %w", req.Method, req.URL.Path, resp.StatusCode, err)
	}
	if len(body) > MaxErrorBody {
		msg := fmt.Sprintf("the API server answered HTTP %d with a body of more than %d bytes, which was not read", resp.StatusCode, MaxErrorBody)
		status := apierrors.NewGenericServerResponse(resp.StatusCode, req.Method, schema.GroupResource{}, "", msg, 0, false).ErrStatus
		status.Kind, status.APIVersion = "Status", "v1"
		if body, err = json.Marshal(status); err != nil {
			return nil, fmt.Errorf("%s %s: encode the cut HTTP %d answer: %w", req.Method, req.URL.Path, resp.StatusCode, err)
		}
		resp.Header = resp.Header.Clone()
		resp.Header.Set("Content-Type", "application/json")
	}
	resp.Header.Set("Content-Length", strconv.Itoa(len(body)))
	resp.ContentLength = int64(len(body))
	resp.Body = io.NopCloser(bytes.NewReader(body))
	return resp, nil
}
