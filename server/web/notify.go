package web

import (
	"net/http"
	"strconv"
	"strings"

	"github.com/ctalk/ctalk/internal/relay"
)

// Notification settings (issue 16): the signed-in person chooses how ctalk
// tells them of new questions and of answers outside their agent, and an
// admin sets the organization's excerpt policy and reads the failed
// deliveries. The rules (what a channel needs, which webhook URLs are
// refused, who may see what) are the relay's: NotificationSettings,
// UpdateNotificationSettings, OrgNotificationSettings, SetOrgExcerpts and
// ListFailedNotifications.

// channelChoice is one channel radio button of the settings form.
type channelChoice struct {
	Value, Label, Help string
	Disabled           bool // email on a server without SMTP
}

// channelChoices are the channels in the relay's order, with what each needs.
func channelChoices(emailAvailable bool, current string) []channelChoice {
	words := map[string][2]string{
		"none":    {"Not at all", "Only your agent and these pages show questions and answers."},
		"email":   {"Email", "Address: your email address."},
		"slack":   {"Slack", "Address: a Slack incoming-webhook URL (https://hooks.slack.com/services/...)."},
		"teams":   {"Microsoft Teams", "Address: a Teams incoming-webhook or workflow URL."},
		"webhook": {"Generic webhook", "Address: an https:// URL that receives signed JSON."},
	}
	out := make([]channelChoice, 0, len(relay.NotifyChannels))
	for _, ch := range relay.NotifyChannels {
		w, ok := words[ch]
		if !ok {
			w = [2]string{ch, ""}
		}
		c := channelChoice{Value: ch, Label: w[0], Help: w[1]}
		if ch == "email" && !emailAvailable {
			// Still choosable when it is the saved channel, so the form
			// keeps it (and the rules explain) rather than silently drop it.
			c.Disabled = current != "email"
			c.Help = "Not available: this server cannot send email (its operator has not set CTALK_SMTP_URL)."
		}
		out = append(out, c)
	}
	return out
}

// notifyForm is the settings form's fields as entered (kept when refused).
type notifyForm struct {
	Channel, Address       string
	OnQuestions, OnAnswers bool
	Delay                  string
	QuietStart, QuietEnd   string
	TimeZone               string
}

func formOf(st relay.NotificationSettings) notifyForm {
	return notifyForm{Channel: st.Channel, Address: st.Address, OnQuestions: st.OnQuestions, OnAnswers: st.OnAnswers,
		Delay: strconv.Itoa(st.DelayMinutes), QuietStart: st.QuietStart, QuietEnd: st.QuietEnd, TimeZone: st.TimeZone}
}

type notifyView struct {
	base
	S        relay.NotificationSettings // as stored
	Form     notifyForm
	Channels []channelChoice
	MaxDelay int
}

// notifySettings is the person's notification settings page; its post
// saves the whole form (which also resumes paused deliveries), or, with
// action=rotate, replaces the generic webhook's signing secret.
func (f *Face) notifySettings(w http.ResponseWriter, r *http.Request, s *session) {
	st, err := f.cfg.Relay.NotificationSettings(r.Context(), s.cred)
	if err != nil {
		f.fail(w, r, s, err)
		return
	}
	v := &notifyView{base: base{Title: "Notifications", Nav: "settings", Sub: "notify"}, S: st, Form: formOf(st), MaxDelay: relay.MaxNotifyDelayMinutes}
	v.setSession(s)
	status := http.StatusOK
	if r.Method == http.MethodPost {
		var u relay.NotificationUpdate
		ok := "notify"
		if r.PostForm.Get("action") == "rotate" {
			u.RotateSecret, ok = true, "rotated"
		} else {
			v.Form = notifyForm{Channel: r.PostForm.Get("channel"), Address: r.PostForm.Get("address"),
				OnQuestions: r.PostForm.Get("on_questions") == "1", OnAnswers: r.PostForm.Get("on_answers") == "1",
				Delay: strings.TrimSpace(r.PostForm.Get("delay_minutes")), QuietStart: r.PostForm.Get("quiet_start"),
				QuietEnd: r.PostForm.Get("quiet_end"), TimeZone: r.PostForm.Get("time_zone")}
			u, v.Alert = updateOf(v.Form)
		}
		if v.Alert == "" {
			_, err = f.cfg.Relay.UpdateNotificationSettings(r.Context(), s.cred, u)
			if err == nil {
				seeOther(w, r, Prefix+"/settings/notifications?ok="+ok)
				return
			}
			msg, st := relayMessage(err)
			if msg == "" || isUnauthorized(err) {
				f.fail(w, r, s, err)
				return
			}
			v.Alert, status = msg, st
		} else {
			status = http.StatusBadRequest
		}
	} else {
		v.Status = statusText[r.URL.Query().Get("ok")]
	}
	v.Channels = channelChoices(st.EmailAvailable, v.Form.Channel)
	f.page.render(w, status, "notify", &v.base, v)
}

// updateOf turns the posted form into an update of every field, or says
// what to fix in a field the rules cannot read (the delay's number).
func updateOf(fm notifyForm) (relay.NotificationUpdate, string) {
	delay := 0
	if fm.Delay != "" {
		n, err := strconv.Atoi(fm.Delay)
		if err != nil {
			return relay.NotificationUpdate{}, "The delay must be a whole number of minutes, 0 for at once. Nothing was saved."
		}
		delay = n
	}
	return relay.NotificationUpdate{Channel: &fm.Channel, Address: &fm.Address, OnQuestions: &fm.OnQuestions,
		OnAnswers: &fm.OnAnswers, DelayMinutes: &delay, QuietStart: &fm.QuietStart, QuietEnd: &fm.QuietEnd,
		TimeZone: &fm.TimeZone}, ""
}

type adminNotifyView struct {
	base
	Org        relay.OrgNotificationSettings
	Failed     []relay.FailedNotification
	Before     int64
	NextBefore int64
}

// adminNotify is the admin console's notifications page: the
// organization's excerpt policy (its post turns it on or off) and the
// failed deliveries, newest first, a page at a time.
func (f *Face) adminNotify(w http.ResponseWriter, r *http.Request, s *session) {
	v := &adminNotifyView{base: base{Title: "Notifications of the organization", Nav: "admin", Sub: "notify"}}
	v.setSession(s)
	status := http.StatusOK
	if r.Method == http.MethodPost {
		on := r.PostForm.Get("excerpts")
		var err error
		if on != "on" && on != "off" {
			v.Alert, status = "Choose on or off, then press Save. Nothing changed.", http.StatusBadRequest
		} else if _, err = f.cfg.Relay.SetOrgExcerpts(f.withAddr(r), adminOf(s), on == "on"); err == nil {
			seeOther(w, r, Prefix+"/admin/notifications?ok=excerpts-"+on)
			return
		}
		if err != nil {
			var answered bool
			if status, answered = f.alertOr(w, r, s, &v.base, err); answered {
				return
			}
		}
	} else {
		v.Status = statusText[r.URL.Query().Get("ok")]
	}
	org, err := f.cfg.Relay.OrgNotificationSettings(r.Context(), adminOf(s))
	if err != nil {
		f.adminFail(w, r, s, err)
		return
	}
	v.Before, _ = strconv.ParseInt(r.URL.Query().Get("before"), 10, 64)
	v.Before = max(v.Before, 0)
	page, err := f.cfg.Relay.ListFailedNotifications(r.Context(), adminOf(s), v.Before)
	if err != nil {
		f.adminFail(w, r, s, err)
		return
	}
	v.Org, v.Failed, v.NextBefore = org, page.Failed, page.NextBefore
	f.page.render(w, status, "admin-notify", &v.base, v)
}
