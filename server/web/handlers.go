package web

import (
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/ctalk/ctalk/internal/relay"
)

type signInView struct {
	base
	OrgID, UserID, Next string
}

// signIn is the sign-in page. Before any session exists its form is
// guarded by a double-submit cookie (SameSite=Strict): another site can
// neither sign a person in to its own account nor read the token.
func (f *Face) signIn(w http.ResponseWriter, r *http.Request) {
	secure := f.secure(r)
	v := &signInView{base: base{Title: "Sign in"}, Next: safeNext(r.URL.Query().Get("next"))}
	v.Status = statusText[r.URL.Query().Get("ok")]
	csrf, fresh := csrfCookie(w, r, secure)
	v.CSRF = csrf
	if r.Method == http.MethodGet {
		f.page.render(w, http.StatusOK, "signin", &v.base, v)
		return
	}
	if !f.parseForm(w, r, nil) {
		return
	}
	v.Status = ""
	v.OrgID, v.UserID, v.Next = r.PostForm.Get("org_id"), r.PostForm.Get("user_id"), safeNext(r.PostForm.Get("next"))
	if fresh || !sameString(r.PostForm.Get("csrf_token"), csrf) {
		v.Alert = "This form expired or came from another site. Sign in again."
		f.page.render(w, http.StatusForbidden, "signin", &v.base, v)
		return
	}
	sess, err := f.cfg.Relay.SignInWeb(f.withAddr(r), v.OrgID, v.UserID, r.PostForm.Get("password"))
	if msg, status := relayMessage(err); msg != "" {
		v.Alert = msg
		f.page.render(w, status, "signin", &v.base, v)
		return
	} else if err != nil {
		f.cfg.Logger.ErrorContext(r.Context(), "web sign-in", "err", err)
		v.Alert = "ctalk could not sign you in just now. Try again in a moment."
		f.page.render(w, http.StatusInternalServerError, "signin", &v.base, v)
		return
	}
	// A session this browser held before (another person's, or its own)
	// ends here rather than linger until it expires.
	if old, err := r.Cookie(SessionCookie(secure)); err == nil && old.Value != "" {
		if err := f.cfg.Relay.SignOutWeb(f.withAddr(r), relay.Credentials{Bearer: old.Value, Resource: relay.WebResource}); err != nil {
			f.cfg.Logger.WarnContext(r.Context(), "ending the previous web session at sign-in", "err", err)
		}
	}
	f.setSession(w, secure, sess.Token)
	to := v.Next
	if to == "" {
		to = Prefix
	}
	seeOther(w, r, to)
}

// safeNext keeps a return path only when it is one of these pages.
func safeNext(p string) string {
	if (p == Prefix || strings.HasPrefix(p, Prefix+"/")) && !strings.ContainsAny(p, "\\\r\n") && !strings.Contains(p, "//") &&
		p != Prefix+"/signin" && p != Prefix+"/signout" {
		return p
	}
	return ""
}

// csrfCookie returns the browser's pre-session CSRF token, setting one when
// it has none; fresh reports one set just now (a post that brought none fails).
func csrfCookie(w http.ResponseWriter, r *http.Request, secure bool) (value string, fresh bool) {
	name := csrfCookieName(secure)
	if ck, err := r.Cookie(name); err == nil && len(ck.Value) == 43 {
		return ck.Value, false
	}
	b := make([]byte, 32)
	rand.Read(b)
	v := base64.RawURLEncoding.EncodeToString(b)
	http.SetCookie(w, &http.Cookie{Name: name, Value: v, Path: "/", HttpOnly: true, Secure: secure, SameSite: http.SameSiteStrictMode})
	return v, true
}

// signOut ends the session on every replica.
func (f *Face) signOut(w http.ResponseWriter, r *http.Request, s *session) {
	if err := f.cfg.Relay.SignOutWeb(f.withAddr(r), s.cred); err != nil {
		f.fail(w, r, s, err)
		return
	}
	f.clearSession(w, f.secure(r))
	seeOther(w, r, Prefix+"/signin?ok=out")
}

type inboxView struct {
	base
	Questions []relay.InboxQuestion
	NextAfter int64 // 0: no more
	// Paused is why the person's notifications stopped, or "" (issue 16).
	Paused string
}

// inbox lists the questions waiting for me, oldest first.
func (f *Face) inbox(w http.ResponseWriter, r *http.Request, s *session) {
	after, _ := strconv.ParseInt(r.URL.Query().Get("after"), 10, 64)
	in, err := f.cfg.Relay.Inbox(r.Context(), s.cred, max(after, 0))
	if err != nil {
		f.fail(w, r, s, err)
		return
	}
	// The owner of an endpoint that kept failing is told here (read with
	// the inbox, in its transaction).
	v := &inboxView{base: base{Title: "Inbox", Nav: "inbox", Live: LiveScript}, Questions: in.Questions, Paused: in.PausedNotice}
	if in.More {
		v.NextAfter = in.Questions[len(in.Questions)-1].MessageID
	}
	v.setSession(s)
	v.Status = statusText[r.URL.Query().Get("ok")]
	f.page.render(w, http.StatusOK, "inbox", &v.base, v)
}

type questionView struct {
	base
	Q     relay.Question
	Text  string // the textarea: my draft, or what I just posted
	Share bool   // the share checkbox: off unless the person ticked it
}

// question shows one question asked of me with my draft; its form saves
// the draft or sends the answer. Typing or confirming the text and pressing
// Send on this page is the person's approval of exactly that text.
func (f *Face) question(w http.ResponseWriter, r *http.Request, s *session) {
	id := pathID(r)
	if id == 0 {
		f.notFound(w, s)
		return
	}
	q, err := f.cfg.Relay.GetQuestion(r.Context(), s.cred, id)
	if err != nil {
		f.fail(w, r, s, err)
		return
	}
	v := &questionView{base: base{Title: "Question from " + q.From.Name, Nav: "inbox"}, Q: q}
	v.setSession(s)
	if q.Draft != nil {
		v.Text = *q.Draft
	}
	if r.Method == http.MethodGet {
		v.Status = statusText[r.URL.Query().Get("ok")]
		if r.URL.Query().Get("ok") == "sent" && q.Answer != nil {
			v.Status = "Answer sent to " + q.From.Name + " only."
			if q.Shared {
				v.Status = "Answer sent and shared: everyone in " + s.me.OrgName + " can find this question and answer."
			}
		}
		f.page.render(w, http.StatusOK, "question", &v.base, v)
		return
	}
	v.Text, v.Share = r.PostForm.Get("answer"), r.PostForm.Get("share") == "1"
	var ok string
	switch r.PostForm.Get("action") {
	case "draft":
		_, err = f.cfg.Relay.Propose(r.Context(), s.cred, id, v.Text)
		ok = "saved"
	case "send":
		err = f.send(r, s, id, v)
		ok = "sent"
	default:
		v.Alert = "Press Save draft or Send."
		f.page.render(w, http.StatusBadRequest, "question", &v.base, v)
		return
	}
	if msg, status := relayMessage(err); msg != "" {
		var re *relay.Error
		if errors.As(err, &re) && re.Kind == relay.KindUnauthorized {
			f.fail(w, r, s, err)
			return
		}
		v.Alert = msg
		f.page.render(w, status, "question", &v.base, v)
		return
	} else if errors.Is(err, errCleaned) {
		v.Alert = "ctalk removed invisible characters or spacing from your answer, so nothing was sent. " +
			"Check the text below and press Send again."
		f.page.render(w, http.StatusConflict, "question", &v.base, v)
		return
	} else if err != nil {
		f.fail(w, r, s, err)
		return
	}
	seeOther(w, r, Prefix+"/q/"+strconv.FormatInt(id, 10)+"?ok="+ok)
}

// errCleaned: the text the relay would send is not what the person posted.
var errCleaned = errors.New("the answer changed when cleaned")

// send sends the posted text as the person's approved answer: the relay
// asks for approval of exactly the text it would send, shared or not; when
// that is the text on the page, the press of Send, with the share checkbox
// as it is, is the approval.
func (f *Face) send(r *http.Request, s *session, id int64, v *questionView) error {
	out, err := f.cfg.Relay.Send(r.Context(), s.cred, id, v.Text, relay.Approval{CanAsk: true, Share: v.Share})
	switch {
	case err != nil:
		return err
	case out.Sent != nil:
		return nil // sent already with this very text: harmless
	case out.Ask == nil:
		return errors.New("relay: Send returned neither a result nor an approval request")
	}
	if out.Ask.MessageID != id || out.Ask.FinalText != shownText(v.Text) {
		v.Text = out.Ask.FinalText
		return errCleaned
	}
	out, err = f.cfg.Relay.Send(r.Context(), s.cred, id, v.Text, relay.Approval{CanAsk: true, Key: out.Ask.Key, Accepted: true, Share: v.Share})
	switch {
	case err != nil:
		return err
	case out.Sent == nil:
		return errors.New("relay: an accepted approval did not send")
	}
	return nil
}

// shownText is the posted text as the person saw it: browsers send a
// textarea's line breaks as CR LF, and surrounding space is invisible.
func shownText(s string) string {
	return strings.TrimSpace(strings.ReplaceAll(s, "\r\n", "\n"))
}

type askedView struct {
	base
	Mine       []relay.MyQuestion
	NextBefore int64
	People     []relay.Profile // whom I can ask
	To         string
	Topic      string
	Question   string
	Chosen     string // whom ctalk chose for a topic, and why
}

// asked lists my questions with their answers, and asks a new one.
func (f *Face) asked(w http.ResponseWriter, r *http.Request, s *session) {
	v := &askedView{base: base{Title: "Asked", Nav: "asked", Live: LiveScript}}
	v.setSession(s)
	status := http.StatusOK
	if r.Method == http.MethodPost {
		v.To, v.Topic, v.Question = r.PostForm.Get("to_user_id"), r.PostForm.Get("topic"), r.PostForm.Get("question")
		var (
			res relay.AskResult
			err error
		)
		oneOf := (v.To == "") != (strings.TrimSpace(v.Topic) == "")
		if oneOf {
			res, err = f.cfg.Relay.AskWith(r.Context(), s.cred, relay.AskInput{To: v.To, Topic: v.Topic, Question: v.Question})
		}
		switch msg, st := relayMessage(err); {
		case !oneOf:
			v.Alert, status = "Choose a person or name a topic (one of the two), then press Ask. Nothing was sent.", http.StatusBadRequest
		case err == nil && res.ChosenBecause == "":
			seeOther(w, r, Prefix+"/asked?ok=asked")
			return
		case err == nil:
			// Whom ctalk chose and why is said once, here: the page is
			// rendered rather than redirected to, and its form starts empty.
			// The note is in the form, which live updates leave as it is.
			v.To, v.Topic, v.Question = "", "", ""
			v.Chosen = fmt.Sprintf("Question sent to %s (%s), chosen because: %s. Its answer shows below when it comes.",
				res.ToName, res.ToUserID, res.ChosenBecause)
		case msg == "" || isUnauthorized(err):
			f.fail(w, r, s, err)
			return
		default:
			v.Alert, status = msg, st
		}
	} else {
		v.Status = statusText[r.URL.Query().Get("ok")]
	}
	before, _ := strconv.ParseInt(r.URL.Query().Get("before"), 10, 64)
	mine, err := f.cfg.Relay.ListMyQuestions(r.Context(), s.cred, before)
	if err != nil {
		f.fail(w, r, s, err)
		return
	}
	v.Mine = mine.Questions
	if mine.More {
		v.NextBefore = mine.Questions[len(mine.Questions)-1].MessageID
	}
	users, err := f.cfg.Relay.ListUsers(r.Context(), s.cred)
	if err != nil {
		f.fail(w, r, s, err)
		return
	}
	for _, u := range users.Users {
		if u.UserID != s.me.UserID && !u.Deactivated {
			v.People = append(v.People, u)
		}
	}
	f.page.render(w, status, "asked", &v.base, v)
}

func isUnauthorized(err error) bool {
	var re *relay.Error
	return errors.As(err, &re) && re.Kind == relay.KindUnauthorized
}

type peopleView struct {
	base
	People []relay.Profile
	Notes  string
}

// people is the directory and my own notes.
func (f *Face) people(w http.ResponseWriter, r *http.Request, s *session) {
	v := &peopleView{base: base{Title: "People", Nav: "people"}, Notes: s.me.Notes}
	v.setSession(s)
	status := http.StatusOK
	if r.Method == http.MethodPost {
		v.Notes = r.PostForm.Get("notes")
		_, err := f.cfg.Relay.UpdateMyNotes(r.Context(), s.cred, v.Notes)
		if err == nil {
			seeOther(w, r, Prefix+"/people?ok=notes")
			return
		}
		msg, st := relayMessage(err)
		var re *relay.Error
		if msg == "" || (errors.As(err, &re) && re.Kind == relay.KindUnauthorized) {
			f.fail(w, r, s, err)
			return
		}
		v.Alert, status = msg, st
	} else {
		v.Status = statusText[r.URL.Query().Get("ok")]
	}
	users, err := f.cfg.Relay.ListUsers(r.Context(), s.cred)
	if err != nil {
		f.fail(w, r, s, err)
		return
	}
	v.People = users.Users
	f.page.render(w, status, "people", &v.base, v)
}

type personView struct {
	base
	P relay.UserProfile
}

// person is one person's profile. A malformed id, a missing person and
// one of another organization all get the same not-found page.
func (f *Face) person(w http.ResponseWriter, r *http.Request, s *session) {
	p, err := f.cfg.Relay.GetUserProfile(r.Context(), s.cred, r.PathValue("id"))
	var re *relay.Error
	if errors.As(err, &re) && (re.Kind == relay.KindNotFound || re.Kind == relay.KindBadInput) {
		f.notFound(w, s)
		return
	} else if err != nil {
		f.fail(w, r, s, err)
		return
	}
	v := &personView{base: base{Title: p.User.Name, Nav: "people"}, P: p}
	v.setSession(s)
	f.page.render(w, http.StatusOK, "person", &v.base, v)
}
