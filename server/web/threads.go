package web

import (
	"errors"
	"net/http"
	"slices"
	"strconv"

	"github.com/ctalk/ctalk/internal/relay"
)

// Conversations and search (issue 14): a conversation's page, where its two
// people continue it, and the search of shared answers and one's own.

type threadView struct {
	base
	ID    int64 // the message the page was opened with
	T     relay.Thread
	Mine  bool         // the viewer is one of the conversation's two people
	Other relay.Person // the other person, for a participant
	ToMe  []int64      // questions to the viewer still waiting for their answer
	Text  string       // the follow-up box, after a refused post
}

// thread shows the conversation of any of its messages: all turns to its
// two people, with a form to continue it; the shared turns to anyone else
// in the organization. A foreign, missing or private id is the one 404.
func (f *Face) thread(w http.ResponseWriter, r *http.Request, s *session) {
	id := pathID(r)
	if id == 0 {
		f.notFound(w, s)
		return
	}
	v := &threadView{base: base{Title: "Conversation"}, ID: id}
	v.setSession(s)
	status := http.StatusOK
	if r.Method == http.MethodPost {
		v.Text = r.PostForm.Get("question")
		res, err := f.cfg.Relay.AskWith(r.Context(), s.cred, relay.AskInput{FollowUpTo: id, Question: v.Text})
		if err == nil {
			seeOther(w, r, Prefix+"/thread/"+strconv.FormatInt(res.MessageID, 10)+"?ok=followup")
			return
		}
		msg, st := relayMessage(err)
		var re *relay.Error
		if msg == "" || (errors.As(err, &re) && re.Kind == relay.KindNotFound) || isUnauthorized(err) {
			f.fail(w, r, s, err)
			return
		}
		v.Alert, status = msg, st
	} else {
		v.Status = statusText[r.URL.Query().Get("ok")]
	}
	t, err := f.cfg.Relay.GetThread(r.Context(), s.cred, id)
	if err != nil {
		f.fail(w, r, s, err)
		return
	}
	v.T = t
	if len(t.Turns) == 0 {
		f.notFound(w, s)
		return
	}
	if first := t.Turns[0]; first.By.UserID == s.me.UserID || first.To.UserID == s.me.UserID {
		v.Mine, v.Other = true, first.To
		if first.To.UserID == s.me.UserID {
			v.Other = first.By
		}
		for _, q := range t.Turns {
			if q.Kind == "question" && q.To.UserID == s.me.UserID && slices.Contains(t.Unanswered, q.MessageID) {
				v.ToMe = append(v.ToMe, q.MessageID)
			}
		}
		v.Title = "Conversation with " + v.Other.Name
	}
	f.page.render(w, status, "thread", &v.base, v)
}

type searchView struct {
	base
	Query  string
	Result *relay.SearchResult
}

// search finds answered questions the viewer may see: shared with the
// organization, or their own. A query without words to search for shows the
// rules' explanation.
func (f *Face) search(w http.ResponseWriter, r *http.Request, s *session) {
	v := &searchView{base: base{Title: "Search", Nav: "search"}, Query: r.URL.Query().Get("q")}
	v.setSession(s)
	if _, asked := r.URL.Query()["q"]; !asked {
		f.page.render(w, http.StatusOK, "search", &v.base, v)
		return
	}
	res, err := f.cfg.Relay.SearchAnswers(r.Context(), s.cred, v.Query)
	if msg, status := relayMessage(err); msg != "" {
		if isUnauthorized(err) {
			f.fail(w, r, s, err)
			return
		}
		v.Alert = msg
		f.page.render(w, status, "search", &v.base, v)
		return
	} else if err != nil {
		f.fail(w, r, s, err)
		return
	}
	v.Result = &res
	v.Title = "Search: " + v.Query
	f.page.render(w, http.StatusOK, "search", &v.base, v)
}
