// ctalk live updates: listens to /app/events (server-sent events of the
// signed-in person's new questions and answers) and, when one comes, fetches
// this page again and swaps the content of <main> in place. Forms are kept
// as they are (so text being typed is not lost), focus stays on the link it
// was on, and a role=status note says what changed. Without this script the
// page's "Reload" link does the same job.
(function () {
  'use strict';
  var main = document.querySelector('main');
  if (!main || !window.EventSource || !window.fetch || !window.DOMParser) {
    return;
  }

  // The note is announced by screen readers when its text changes.
  var note = document.createElement('p');
  note.setAttribute('role', 'status');
  note.className = 'small';
  note.setAttribute('data-live', 'note');
  main.insertBefore(note, main.firstChild);

  function say(text, withReload) {
    note.textContent = text;
    if (withReload) {
      var a = document.createElement('a');
      a.href = location.pathname + location.search;
      a.textContent = 'Reload';
      note.appendChild(document.createTextNode(' '));
      note.appendChild(a);
    }
  }

  // The parts of <main> that the server renders, forms left out.
  function signature(root) {
    var out = [];
    Array.prototype.forEach.call(root.children, function (n) {
      if (n.tagName !== 'FORM' && n.getAttribute('data-live') !== 'note') {
        out.push(n.outerHTML);
      }
    });
    return out.join('');
  }

  function swap(fresh) {
    if (signature(fresh) === signature(main)) {
      return false;
    }
    var active = document.activeElement;
    var focusHref = active && active.tagName === 'A' && main.contains(active) ? active.getAttribute('href') : null;
    var focusLost = active && main.contains(active) && !active.closest('form');

    var forms = {};
    Array.prototype.forEach.call(main.querySelectorAll(':scope > form'), function (f) {
      forms[f.getAttribute('action')] = f;
    });
    // Remove what the fresh page replaces; keep the note and the forms in
    // place (moving a node would drop its focus).
    Array.prototype.slice.call(main.children).forEach(function (n) {
      if (n !== note && !(n.tagName === 'FORM' && forms[n.getAttribute('action')] === n)) {
        n.remove();
      }
    });
    var pending = [];
    Array.prototype.slice.call(fresh.children).forEach(function (n) {
      var kept = n.tagName === 'FORM' ? forms[n.getAttribute('action')] : null;
      if (kept) {
        pending.forEach(function (p) { main.insertBefore(p, kept); });
        pending = [];
      } else if (n.getAttribute('role') !== 'status') {
        pending.push(document.importNode(n, true));
      }
    });
    pending.forEach(function (p) { main.appendChild(p); });

    if (focusHref) {
      var same = main.querySelector('a[href="' + CSS.escape(focusHref) + '"]');
      if (same) {
        same.focus();
        return true;
      }
    }
    if (focusLost) {
      var h1 = main.querySelector('h1');
      if (h1) {
        h1.setAttribute('tabindex', '-1');
        h1.focus();
      }
    }
    return true;
  }

  var busy = false;
  var again = null;
  function refresh(what) {
    if (busy) {
      again = what || again;
      return;
    }
    busy = true;
    fetch(location.pathname + location.search, {
      credentials: 'same-origin', cache: 'no-store', headers: { Accept: 'text/html' }
    }).then(function (r) {
      if (!r.ok || r.redirected) {
        throw new Error('page answered ' + r.status);
      }
      return r.text();
    }).then(function (html) {
      // Only <main> is parsed: the page's <style> carries another response's
      // nonce, and parsing it here would be a (harmless, but logged) CSP
      // violation. People's text is escaped, so "<main" is the element.
      var start = html.indexOf('<main');
      var end = html.lastIndexOf('</main>');
      var fresh = start < 0 || end < start ? null
        : new DOMParser().parseFromString(html.slice(start, end + 7), 'text/html').querySelector('main');
      if (!fresh) {
        throw new Error('no main in the page');
      }
      if (swap(fresh) && what) {
        say(what + ' The list is updated.', false);
      }
    }).catch(function () {
      say((what || 'Something changed.') + ' Reload the page to see it.', true);
    }).then(function () {
      busy = false;
      if (again) {
        var next = again;
        again = null;
        refresh(next);
      }
    });
  }

  var source = null;
  var failures = 0;
  function listen() {
    source = new EventSource('/app/events');
    source.addEventListener('ready', function (e) {
      if (failures > 0) {
        say('', false);
      }
      failures = 0;
      var d = {};
      try { d = JSON.parse(e.data); } catch (err) { /* keep defaults */ }
      // A fresh stream starts after the page was rendered: catch up once.
      if (!d.resumed) {
        refresh('New messages arrived.');
      }
    });
    source.addEventListener('question', function () { refresh('New question.'); });
    source.addEventListener('answer', function () { refresh('New answer.'); });
    source.addEventListener('end', function () {
      source.close();
      say('Live updates stopped: you are signed out.', true);
    });
    source.addEventListener('error', function () {
      if (source.readyState !== EventSource.CLOSED) {
        return; // the browser reconnects by itself
      }
      // Refused (busy) or not a stream: the Reload link still works; try
      // again later, less often each time.
      failures++;
      say('Live updates are paused.', true);
      setTimeout(listen, Math.min(300, 15 * Math.pow(2, failures)) * 1000);
    });
  }
  listen();
}());
