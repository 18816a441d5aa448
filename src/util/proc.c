/*
 * Child processes: vfork + execve of a PATH-resolved program in its own
 * process group, one poll() loop that reads the merged output, feeds
 * stdin, and enforces the deadline, the idle timeout and stop requests
 * by signalling the whole group (SIGINT, SIGTERM, SIGKILL).
 *
 * Everything the child needs (environment, PATH candidates, the argv for
 * the /bin/sh fallback) is built in the parent before vfork(); between
 * vfork() and execve() the child makes only async-signal-safe calls.
 *
 * Why vfork: fork() copies the parent's page tables, and the loop's
 * process holds a repository index of tens of thousands of entries, so
 * every git it ran paid for copying them (most of a loop iteration's own
 * cost, issue 26). A vfork child borrows the parent's memory until it
 * execs: it runs with every signal blocked until it has reset all
 * handlers to SIG_DFL (no handler of ours runs on borrowed memory), it
 * writes nothing the parent reads but the exec-error pipe and the
 * candidate slot of the /bin/sh argv (built for it), and it never returns
 * from the function that called vfork (child_exec ends in execve or _exit;
 * both functions are kept out of line, so the child's frames lie below
 * the parent's).
 *
 * How we notice that the direct child exited: a pidfd (Linux >= 5.3) in
 * the poll set; without one, waitpid(WNOHANG) on a short poll tick.
 */
#include "gdnctl/compat.h"
#include "gdnctl/proc.h"
#include "gdnctl/err.h"
#include "gdnctl/lock.h"
#include "gdnctl/strvec.h"
#include "gdnctl/xalloc.h"

#define PROC_MAX_LIVE	 64
#define DEFAULT_GRACE_MS 5000
#define READ_CHUNK	 65536
#define DRAIN_MAX_READS	 64 /* final drain: what a pipe can hold, not a chatty grandchild */
#define WRITE_CHUNK	 65536
#define TICK_MS		 250 /* longest poll: other threads may drain the wake pipe */
#define REAP_TICK_MS	 20  /* waitpid/kill(-pgid, 0) polling, when no event tells us */
#define DEFAULT_PATH	 "/bin:/usr/bin"
#define LEFTOVER_TICK_MS 50 /* a /proc scan each: every process's stat and environ */

/* What the child reports through the close-on-exec pipe before _exit(127). */
enum child_stage {
	STAGE_SETUP = 1, /* dup2 */
	STAGE_CHDIR,
	STAGE_EXEC,
};

/* ---- registry of live child groups, stop requests, signals ---- */

struct live {
	bool used;
	pid_t pgid; /* 0 while the slot is reserved before vfork() */
	int grace_ms;
};

static pthread_mutex_t live_lock = PTHREAD_MUTEX_INITIALIZER;
static struct live live[PROC_MAX_LIVE];
static int live_nr;
/* Bumped by gdn_proc_kill_all() (under live_lock); runs compare with their start value. */
static unsigned stop_gen;

/* Written by the signal handler only. */
static volatile sig_atomic_t sig_first, sig_last;
static volatile sig_atomic_t sig_count;

/* Self-pipe: the handler and gdn_proc_kill_all() write a byte, running loops poll it. */
static int wake_pipe[2] = {-1, -1};
/* Written by the handler only and never drained: readable once a signal came. */
static int sig_pipe[2] = {-1, -1};
static pthread_once_t wake_once = PTHREAD_ONCE_INIT;

static void wake_init(void)
{
	if (pipe2(wake_pipe, O_CLOEXEC | O_NONBLOCK)) {
		wake_pipe[0] = -1;
		wake_pipe[1] = -1;
	}
	if (pipe2(sig_pipe, O_CLOEXEC | O_NONBLOCK)) {
		sig_pipe[0] = -1;
		sig_pipe[1] = -1;
	}
}

static void wake_all(void)
{
	char c = 0;

	if (wake_pipe[1] >= 0 && write(wake_pipe[1], &c, 1) < 0) {
		/* full (already awake) or broken: loops also poll on a tick */
	}
}

static void wake_drain(void)
{
	char buf[64];

	while (read(wake_pipe[0], buf, sizeof(buf)) > 0)
		;
}

static void on_signal(int sig)
{
	int saved = errno;

	if (!sig_first)
		sig_first = sig;
	sig_last = sig;
	sig_count = sig_count + 1;
	wake_all();
	if (sig_pipe[1] >= 0 && write(sig_pipe[1], "", 1) < 0) {
		/* full: it is readable already */
	}
	errno = saved;
}

void gdn_proc_install_signal_handlers(void)
{
	struct sigaction sa;

	pthread_once(&wake_once, wake_init);
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	sigaddset(&sa.sa_mask, SIGINT);
	sigaddset(&sa.sa_mask, SIGTERM);
	sa.sa_flags = SA_RESTART;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
}

int gdn_proc_interrupted(void)
{
	return sig_first;
}

int gdn_proc_wait_input(int fd)
{
	struct pollfd pf[2] = {{fd, POLLIN, 0}, {sig_pipe[0], POLLIN, 0}};

	if (fd < 0)
		return 1; /* poll() would ignore it: let the read report EBADF */
	for (;;) {
		int n;

		if (sig_first)
			return 0;
		n = poll(pf, 2, -1);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -1;
		if (sig_first || pf[1].revents)
			return 0;
		if (pf[0].revents)
			return 1;
	}
}

static int live_reserve(int grace_ms)
{
	int i, slot = -1;

	pthread_mutex_lock(&live_lock);
	for (i = 0; i < PROC_MAX_LIVE && slot < 0; i++) {
		if (!live[i].used) {
			live[i].used = true;
			live[i].pgid = 0;
			live[i].grace_ms = grace_ms;
			live_nr++;
			slot = i;
		}
	}
	pthread_mutex_unlock(&live_lock);
	return slot;
}

static void live_set(int slot, pid_t pgid)
{
	pthread_mutex_lock(&live_lock);
	live[slot].pgid = pgid;
	pthread_mutex_unlock(&live_lock);
}

static void live_release(int slot)
{
	if (slot < 0)
		return;
	pthread_mutex_lock(&live_lock);
	live[slot].used = false;
	live[slot].pgid = 0;
	live_nr--;
	pthread_mutex_unlock(&live_lock);
}

static bool live_has(pid_t pgid)
{
	bool found = false;
	int i;

	pthread_mutex_lock(&live_lock);
	for (i = 0; i < PROC_MAX_LIVE && !found; i++)
		found = live[i].used && live[i].pgid == pgid;
	pthread_mutex_unlock(&live_lock);
	return found;
}

static unsigned stop_generation(void)
{
	unsigned gen;

	pthread_mutex_lock(&live_lock);
	gen = stop_gen;
	pthread_mutex_unlock(&live_lock);
	return gen;
}

int gdn_proc_live_count(void)
{
	int n;

	pthread_mutex_lock(&live_lock);
	n = live_nr;
	pthread_mutex_unlock(&live_lock);
	return n;
}

static bool group_exists(pid_t pgid)
{
	return !(kill(-pgid, 0) < 0 && errno == ESRCH);
}

static void sleep_ms(int ms)
{
	/* poll() as a sleep: EINTR just ends the nap early, callers loop on a clock */
	poll(NULL, 0, ms);
}

/* Whether group `pgid` still needs signals. */
typedef bool (*group_alive_fn)(pid_t pgid, void *payload);

/*
 * Send SIGINT, then SIGTERM, then SIGKILL to each of groups[0..n) that is
 * still alive, waiting up to grace_ms after each step (at most 1 s after
 * the SIGKILL) for them all to be done. A group found done is dropped
 * (its entry zeroed).
 */
static void escalate(pid_t *groups, int n, int grace_ms, group_alive_fn alive, void *payload)
{
	static const int sigs[] = {SIGINT, SIGTERM, SIGKILL};

	for (int s = 0; s < (int)ARRAY_SIZE(sigs); s++) {
		int64_t until = gdn_now_ms() + grace_ms;
		int left = 0;

		for (int i = 0; i < n; i++) {
			if (groups[i] && !alive(groups[i], payload))
				groups[i] = 0;
			if (groups[i]) {
				kill(-groups[i], sigs[s]);
				left++;
			}
		}
		if (!left)
			break;
		if (sigs[s] == SIGKILL && grace_ms > 1000)
			until = gdn_now_ms() + 1000;
		while (left && gdn_now_ms() < until) {
			sleep_ms(REAP_TICK_MS);
			left = 0;
			for (int i = 0; i < n; i++)
				if (groups[i] && alive(groups[i], payload))
					left++;
		}
	}
}

/* A registered group: alive while its owner has not reaped the child and it has members. */
static bool registered_alive(pid_t pgid, void *payload)
{
	(void)payload;
	return live_has(pgid) && group_exists(pgid);
}

void gdn_proc_kill_all(void)
{
	pid_t groups[PROC_MAX_LIVE];
	int i, n = 0, grace = 0;

	pthread_once(&wake_once, wake_init);
	pthread_mutex_lock(&live_lock);
	stop_gen++;
	for (i = 0; i < PROC_MAX_LIVE; i++) {
		if (!live[i].used || !live[i].pgid)
			continue;
		groups[n++] = live[i].pgid;
		if (live[i].grace_ms > grace)
			grace = live[i].grace_ms;
	}
	pthread_mutex_unlock(&live_lock);
	wake_all();

	/*
	 * The owners escalate too and reap; we only make sure it happens even
	 * if an owner is slow. A group is done when it is empty or its owner
	 * has reaped the child and dropped it from the registry.
	 */
	escalate(groups, n, grace, registered_alive, NULL);
}

/*
 * A group we did not start: alive while it has members, and its leader is
 * the same process or has ended (a zombie, or gone). The number of a group
 * with members is not given to a new process, so members outliving their
 * leader (a child that ignores SIGINT) are the same group and get the next
 * signal; only a leader with another start time means the group ended and
 * its number went to a stranger.
 */
static bool leader_alive(pid_t pgid, void *payload)
{
	const long long *started = payload;
	long long now;

	if (!group_exists(pgid))
		return false;
	now = gdn_proc_started(pgid);
	return now == *started || now < 0;
}

void gdn_proc_stop_group(pid_t pgid, long long started, int grace_ms)
{
	/* the first signal only to the journaled leader itself */
	if (pgid <= 1 || started < 0 || gdn_proc_started(pgid) != started)
		return;
	escalate(&pgid, 1, grace_ms, leader_alive, &started);
}

/* ---- what a finished child left behind ---- */

/* Whether a slot is reserved whose child may be started but not yet registered. */
static bool live_in_flight(void)
{
	bool found = false;

	pthread_mutex_lock(&live_lock);
	for (int i = 0; i < PROC_MAX_LIVE && !found; i++)
		found = live[i].used && !live[i].pgid;
	pthread_mutex_unlock(&live_lock);
	return found;
}

bool gdn_proc_set_subreaper(void)
{
#if defined(__linux__) && defined(PR_SET_CHILD_SUBREAPER)
	return prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0;
#else
	return false;
#endif
}

void gdn_proc_leftovers_release(struct gdn_proc_leftovers *l)
{
	if (!l)
		return;
	for (size_t i = 0; i < l->nr; i++)
		free(l->v[i].argv0);
	free(l->v);
	l->v = NULL;
	l->nr = l->alloc = 0;
}

/* A process being stopped: the same process while its start time is the same. */
struct target {
	pid_t pid;
	long long started;
	int sent; /* the last signal sent, or 0 */
};

struct scan {
	pid_t pgid, self;
	bool group_ours; /* pgid is still the finished child's group */
	const char *mark;
	long long not_before; /* older processes cannot hold the mark */
	struct target *t;
	size_t nr, alloc;
	bool reap_strays; /* no fork of ours in flight: unknown zombie children can be reaped */
};

static void scan_one(const struct gdn_proc_info *pi, void *payload)
{
	struct scan *sc = payload;
	bool mine;

	if (pi->zombie) {
		/* ours and nobody waits for it: a re-parented orphan, or a stopped leftover */
		if (pi->ppid == sc->self && sc->reap_strays && !live_has(pi->pid))
			waitpid(pi->pid, NULL, WNOHANG);
		return;
	}
	if (live_has(pi->pid) || live_has(pi->pgid))
		return; /* a live child of ours, or its group */
	mine = (sc->group_ours && pi->pgid == sc->pgid) ||
	       (sc->mark && (sc->not_before < 0 || pi->started >= sc->not_before) &&
		gdn_proc_env_has(pi->pid, sc->mark));
	if (!mine)
		return;
	for (size_t i = 0; i < sc->nr; i++)
		if (sc->t[i].pid == pi->pid && sc->t[i].started == pi->started)
			return;
	ALLOC_GROW(sc->t, sc->nr + 1, sc->alloc);
	sc->t[sc->nr++] = (struct target){pi->pid, pi->started, 0};
}

static void rescan(struct scan *sc)
{
	sc->group_ours = sc->pgid > 1 && !live_has(sc->pgid);
	sc->reap_strays = !live_in_flight();
	gdn_proc_each(scan_one, sc);
}

/* Whether target t is still that process (not gone, not a zombie, not a new one). */
static bool target_alive(const struct target *t)
{
	return t->started >= 0 && gdn_proc_started(t->pid) == t->started;
}

/* Send sig to every live target that has not had it; how many are alive. */
static size_t signal_targets(struct scan *sc, int sig)
{
	size_t alive = 0;

	for (size_t i = 0; i < sc->nr; i++) {
		struct target *t = &sc->t[i];

		if (!target_alive(t))
			continue;
		alive++;
		if (t->sent != sig) {
			kill(t->pid, sig);
			t->sent = sig;
		}
	}
	return alive;
}

void gdn_proc_stop_leftovers(pid_t pgid, const char *mark, long long not_before, int grace_ms,
			     struct gdn_proc_leftovers *killed)
{
	static const int sigs[] = {SIGTERM, SIGKILL};
	struct scan sc = {.pgid = pgid,
			  .self = getpid(),
			  .mark = mark && *mark ? mark : NULL,
			  .not_before = not_before};

	if (grace_ms <= 0)
		grace_ms = 2000;
	rescan(&sc);
	/* Their names before they die. */
	for (size_t i = 0; i < sc.nr; i++) {
		char *name = gdn_proc_argv0(sc.t[i].pid);

		if (!killed || !target_alive(&sc.t[i])) {
			free(name);
			continue;
		}
		ALLOC_GROW(killed->v, killed->nr + 1, killed->alloc);
		killed->v[killed->nr++] =
		    (struct gdn_proc_leftover){sc.t[i].pid, name ? name : xstrdup("?")};
	}
	for (size_t s = 0; s < ARRAY_SIZE(sigs) && sc.nr; s++) {
		int64_t until = gdn_now_ms() + (sigs[s] == SIGKILL ? 1000 : grace_ms);
		size_t seen = sc.nr;

		while (signal_targets(&sc, sigs[s]) && gdn_now_ms() < until) {
			sleep_ms(LEFTOVER_TICK_MS);
			/* children of the dying re-parented to us, processes started meanwhile */
			rescan(&sc);
			for (; killed && seen < sc.nr; seen++) {
				char *name = gdn_proc_argv0(sc.t[seen].pid);

				ALLOC_GROW(killed->v, killed->nr + 1, killed->alloc);
				killed->v[killed->nr++] = (struct gdn_proc_leftover){
				    sc.t[seen].pid, name ? name : xstrdup("?")};
			}
		}
	}
	/* the zombies of those that were our children */
	if (sc.nr)
		rescan(&sc);
	free(sc.t);
}

/* ---- preparing the spawn (parent, before vfork) ---- */

static bool env_name_eq(const char *entry, const char *spec)
{
	size_t n = strcspn(spec, "=");

	return !strncmp(entry, spec, n) && (entry[n] == '=' || entry[n] == '\0');
}

/* The child's environment: ours, with p->env's removals and additions applied. */
static void build_env(struct strvec *envv, const char *const *changes)
{
	char **e;
	size_t i;

	for (e = environ; e && *e; e++) {
		bool drop = false;

		for (i = 0; changes && changes[i] && !drop; i++)
			drop = env_name_eq(*e, changes[i]);
		if (!drop)
			strvec_push(envv, *e);
	}
	for (i = 0; changes && changes[i]; i++)
		if (strchr(changes[i], '='))
			strvec_push(envv, changes[i]);
}

/* Paths to try for argv[0], in order (as execvp: PATH entries, empty = current directory). */
static void build_candidates(struct strvec *cands, const char *prog, const struct strvec *envv)
{
	const char *path = DEFAULT_PATH, *p;
	size_t i;

	if (strchr(prog, '/')) {
		strvec_push(cands, prog);
		return;
	}
	for (i = 0; i < envv->nr; i++)
		if (!strncmp(envv->v[i], "PATH=", 5))
			path = envv->v[i] + 5;
	for (p = path;; p++) {
		size_t len = strcspn(p, ":");

		if (!len)
			strvec_push(cands, prog);
		else
			strvec_pushf(cands, "%.*s/%s", (int)len, p, prog);
		p += len;
		if (!*p)
			break;
	}
}

/* Move fd above 0..2 so that dup2() onto stdio in the child cannot clobber it. */
static int fd_above_stdio(int fd)
{
	int nfd;

	if (fd < 0 || fd > 2)
		return fd;
	nfd = fcntl(fd, F_DUPFD_CLOEXEC, 3);
	close(fd);
	return nfd;
}

static int pipe_cloexec(int fds[2])
{
	if (pipe2(fds, O_CLOEXEC))
		return -1;
	fds[0] = fd_above_stdio(fds[0]);
	fds[1] = fd_above_stdio(fds[1]);
	if (fds[0] < 0 || fds[1] < 0)
		return -1;
	return 0;
}

static void close_fd(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

static bool trace_enabled(void)
{
	const char *t = getenv("GDNCTL_TRACE");

	return t && *t && strcmp(t, "0");
}

/*
 * The one place below src/cmd that writes to stderr: GDNCTL_TRACE is an
 * opt-in debug trace, and it must show the exact spawn as it happens.
 */
static void trace_spawn(const struct gdn_proc *p)
{
	struct sbuf sb = SBUF_INIT;

	sbuf_adds(&sb, "[gdnctl] trace: spawn: ");
	gdn_argv_format(&sb, p->argv);
	if (p->dir) {
		sbuf_adds(&sb, " (in ");
		sbuf_add_shell_quoted(&sb, p->dir);
		sbuf_addch(&sb, ')');
	}
	gdn_secret_mask(&sb);
	sbuf_addch(&sb, '\n');
	fwrite(sb.buf, 1, sb.len, stderr);
	fflush(stderr);
	sbuf_release(&sb);
}

/* ---- the child, between vfork() and execve(): async-signal-safe calls only ---- */

struct child_plan {
	const char *const *cands;
	char *const *argv;
	char **sh_argv; /* {"/bin/sh", <candidate>, argv[1..], NULL} for ENOEXEC */
	char *const *envp;
	const char *dir;
	int in_fd, out_fd, err_fd; /* out_fd -1: inherit stdout/stderr */
};

static GDN_NORETURN void child_fail(int fd, int stage, int e)
{
	int msg[2] = {stage, e};

	if (write(fd, msg, sizeof(msg)) < 0) {
		/* nothing more we can do; the parent sees EOF and exit 127 */
	}
	_exit(127);
}

static GDN_NORETURN GDN_NOINLINE void child_exec(const struct child_plan *cp)
{
	struct sigaction sa;
	sigset_t none;
	bool eacces = false;
	size_t i;
	int sig;

	setpgid(0, 0);
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = SIG_DFL;
	sigemptyset(&sa.sa_mask);
	for (sig = 1; sig < NSIG; sig++)
		sigaction(sig, &sa, NULL); /* EINVAL for SIGKILL, SIGSTOP and libc's own: fine */
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);

	if (dup2(cp->in_fd, STDIN_FILENO) < 0)
		child_fail(cp->err_fd, STAGE_SETUP, errno);
	if (cp->out_fd >= 0 &&
	    (dup2(cp->out_fd, STDOUT_FILENO) < 0 || dup2(cp->out_fd, STDERR_FILENO) < 0))
		child_fail(cp->err_fd, STAGE_SETUP, errno);
	if (cp->dir && chdir(cp->dir) < 0)
		child_fail(cp->err_fd, STAGE_CHDIR, errno);

	for (i = 0; cp->cands[i]; i++) {
		int e;

		execve(cp->cands[i], cp->argv, cp->envp);
		e = errno;
		if (e == ENOEXEC) {
			cp->sh_argv[1] = (char *)cp->cands[i];
			execve(cp->sh_argv[0], cp->sh_argv, cp->envp);
			e = errno;
		}
		if (e == EACCES)
			eacces = true;
		else if (e != ENOENT && e != ENOTDIR && e != ESTALE && e != ENODEV &&
			 e != ETIMEDOUT)
			child_fail(cp->err_fd, STAGE_EXEC, e);
		if (!cp->cands[1])
			child_fail(cp->err_fd, STAGE_EXEC, e);
	}
	child_fail(cp->err_fd, STAGE_EXEC, eacces ? EACCES : ENOENT);
}

/* The child's start: see the top of this file for what it may touch. */
static GDN_NOINLINE pid_t start_child(const struct child_plan *cp)
{
	pid_t pid = vfork();

	if (!pid)
		child_exec(cp);
	return pid;
}

/* ---- the parent's loop ---- */

struct run {
	struct gdn_proc *p;
	pid_t pgid;
	int out_fd, in_fd, pid_fd;
	size_t in_off, in_len;
	struct sbuf line;
	bool reaped, lines_off, group_gone;
	int wstatus, grace;
	enum gdn_proc_status reason; /* why we are killing it, or NOT_RUN */
	int stage;		     /* signals sent: 1 SIGINT, 2 SIGTERM, 3 SIGKILL */
	int64_t start, last_out, next_kill, next_tick;
	sig_atomic_t sig_seen;
	unsigned gen_seen;
};

static void start_kill(struct run *r, enum gdn_proc_status reason, int64_t now)
{
	if (r->reason || r->reaped)
		return;
	r->reason = reason;
	r->stage = 1;
	kill(-r->pgid, SIGINT);
	r->next_kill = now + r->grace;
	close_fd(&r->in_fd); /* no more stdin; EOF may help it finish */
}

static void deliver_line(struct run *r)
{
	struct gdn_proc *p = r->p;

	if (!r->lines_off && p->on_line(r->line.buf, r->line.len, p->payload)) {
		r->lines_off = true;
		start_kill(r, GDN_PROC_STOPPED, gdn_now_ms());
	}
	sbuf_reset(&r->line);
}

static void handle_output(struct run *r, const char *buf, size_t n)
{
	struct gdn_proc *p = r->p;

	if (p->capture && !p->out_truncated && sbuf_add(&p->out, buf, n) < 0)
		p->out_truncated = true;
	while (p->on_line && n && !r->lines_off) {
		const char *nl = memchr(buf, '\n', n);
		size_t take = nl ? (size_t)(nl - buf) : n;

		if (take > GDN_PROC_LINE_MAX - r->line.len) {
			take = GDN_PROC_LINE_MAX - r->line.len;
			nl = NULL;
		}
		sbuf_add(&r->line, buf, take);
		buf += take;
		n -= take;
		if (nl) {
			buf++;
			n--;
		}
		if (nl || r->line.len == GDN_PROC_LINE_MAX)
			deliver_line(r);
	}
}

static void close_out(struct run *r)
{
	if (r->out_fd < 0)
		return;
	close_fd(&r->out_fd);
	if (r->p->on_line && r->line.len)
		deliver_line(r);
}

/* Read once (drain: until nothing is left, bounded). Closes out_fd at EOF or error. */
static void read_output(struct run *r, bool drain)
{
	char buf[READ_CHUNK];
	int reads = 0;

	while (r->out_fd >= 0 && reads++ < DRAIN_MAX_READS) {
		ssize_t n = read(r->out_fd, buf, sizeof(buf));

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return;
		if (n <= 0) {
			close_out(r);
			return;
		}
		r->last_out = gdn_now_ms();
		handle_output(r, buf, (size_t)n);
		if (!drain)
			return;
	}
}

/* Write some stdin with SIGPIPE held off, whatever the process does with it. */
static void feed_stdin(struct run *r)
{
	const char *text = r->p->stdin_text;
	size_t len = r->in_len - r->in_off;
	sigset_t pipeset, old, pending;
	bool was_pending;
	ssize_t n;

	if (len > WRITE_CHUNK)
		len = WRITE_CHUNK;
	sigemptyset(&pipeset);
	sigaddset(&pipeset, SIGPIPE);
	sigpending(&pending);
	was_pending = sigismember(&pending, SIGPIPE);
	pthread_sigmask(SIG_BLOCK, &pipeset, &old);
	do {
		n = write(r->in_fd, text + r->in_off, len);
	} while (n < 0 && errno == EINTR);
	if (n < 0 && errno == EPIPE && !was_pending) {
		struct timespec zero = {0, 0};

		while (sigtimedwait(&pipeset, NULL, &zero) < 0 && errno == EINTR)
			;
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);

	if (n > 0)
		r->in_off += (size_t)n;
	else if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK)
		close_fd(&r->in_fd); /* EPIPE: the child does not want the rest */
	if (r->in_off >= r->in_len)
		close_fd(&r->in_fd);
}

static void try_reap(struct run *r)
{
	pid_t got;

	if (r->reaped)
		return;
	do {
		got = waitpid(r->p->pid, &r->wstatus, WNOHANG);
	} while (got < 0 && errno == EINTR);
	if (got == r->p->pid) {
		r->reaped = true;
	} else if (got < 0 && errno == ECHILD) {
		/* someone else reaped it (SIGCHLD ignored, a stray waitpid(-1)) */
		r->reaped = true;
		r->wstatus = 255 << 8;
	}
	if (r->reaped)
		close_fd(&r->pid_fd);
}

/*
 * After we killed the child: keep signalling until its group is empty.
 * Members that became our children (we are a subreaper) are reaped here.
 */
static void check_group(struct run *r, int64_t now)
{
	int st;

	while (waitpid(-r->pgid, &st, WNOHANG) > 0)
		;
	if (!group_exists(r->pgid)) {
		r->group_gone = true;
		return;
	}
	if (r->stage >= 3) {
		kill(-r->pgid, SIGKILL);
		/* Give up a grace after SIGKILL: stuck in the kernel, or an unreaped zombie. */
		if (now >= r->next_kill)
			r->group_gone = true;
	}
}

static void check_deadlines(struct run *r, int64_t now)
{
	struct gdn_proc *p = r->p;

	if (!r->reason && !r->reaped) {
		if (sig_count != r->sig_seen) {
			p->stop_signal = sig_last;
			start_kill(r, GDN_PROC_STOPPED, now);
		} else if (stop_generation() != r->gen_seen) {
			start_kill(r, GDN_PROC_STOPPED, now);
		} else if (p->timeout_ms > 0 && now - r->start >= p->timeout_ms) {
			start_kill(r, GDN_PROC_TIMEOUT, now);
		} else if (p->idle_timeout_ms > 0 && now - r->last_out >= p->idle_timeout_ms) {
			start_kill(r, GDN_PROC_IDLE, now);
		}
	}
	if (p->on_tick && p->tick_ms > 0 && !r->reason && !r->reaped && now >= r->next_tick) {
		r->next_tick = now + p->tick_ms;
		p->on_tick(now - r->start, now - r->last_out, p->payload);
	}
	if (r->reason && r->stage < 3 && now >= r->next_kill) {
		r->stage++;
		kill(-r->pgid, r->stage == 2 ? SIGTERM : SIGKILL);
		r->next_kill = now + r->grace;
	}
	if (r->reason && r->reaped && !r->group_gone)
		check_group(r, now);
}

static bool finished(struct run *r)
{
	if (!r->reaped)
		return false;
	if (r->reason && !r->group_gone)
		return false;
	/* Everything the child wrote is in the pipe now; leftovers are not waited for. */
	read_output(r, true);
	close_out(r);
	return true;
}

static int poll_timeout(const struct run *r, int64_t now)
{
	const struct gdn_proc *p = r->p;
	int64_t wake = now + TICK_MS;

	if (!r->reason && !r->reaped) {
		if (p->timeout_ms > 0 && r->start + p->timeout_ms < wake)
			wake = r->start + p->timeout_ms;
		if (p->idle_timeout_ms > 0 && r->last_out + p->idle_timeout_ms < wake)
			wake = r->last_out + p->idle_timeout_ms;
	}
	/* the next escalation; after SIGKILL, only the pidfd or a tick wakes us */
	if (r->reason && r->stage < 3 && r->next_kill < wake)
		wake = r->next_kill;
	if (p->on_tick && p->tick_ms > 0 && !r->reason && !r->reaped && r->next_tick < wake)
		wake = r->next_tick;
	if ((r->reaped || r->pid_fd < 0) && now + REAP_TICK_MS < wake)
		wake = now + REAP_TICK_MS;
	return wake > now ? (int)(wake - now) : 0;
}

static void pump(struct run *r)
{
	for (;;) {
		struct pollfd pfd[4];
		int nfds = 0, out_i = -1, in_i = -1, wake_i = -1, pid_i = -1;
		int64_t now = gdn_now_ms();
		int i, n;

		check_deadlines(r, now);
		if (finished(r))
			return;
		if (r->out_fd >= 0) {
			out_i = nfds;
			pfd[nfds++] = (struct pollfd){r->out_fd, POLLIN, 0};
		}
		if (r->in_fd >= 0) {
			in_i = nfds;
			pfd[nfds++] = (struct pollfd){r->in_fd, POLLOUT, 0};
		}
		if (wake_pipe[0] >= 0) {
			wake_i = nfds;
			pfd[nfds++] = (struct pollfd){wake_pipe[0], POLLIN, 0};
		}
		if (r->pid_fd >= 0) {
			pid_i = nfds;
			pfd[nfds++] = (struct pollfd){r->pid_fd, POLLIN, 0};
		}
		for (i = 0; i < nfds; i++)
			pfd[i].revents = 0;
		n = poll(pfd, (nfds_t)nfds, poll_timeout(r, now));
		if (n < 0) {
			if (errno != EINTR && errno != EAGAIN && errno != ENOMEM)
				BUG("poll failed: %s", strerror(errno));
			continue;
		}
		if (wake_i >= 0 && pfd[wake_i].revents)
			wake_drain();
		if (in_i >= 0 && r->in_fd >= 0) {
			/* no reader: POLLOUT|POLLERR; the write gets EPIPE and closes */
			if (pfd[in_i].revents & POLLOUT)
				feed_stdin(r);
			else if (pfd[in_i].revents)
				close_fd(&r->in_fd);
		}
		if (out_i >= 0 && pfd[out_i].revents)
			read_output(r, false);
		if (pid_i >= 0 && pfd[pid_i].revents)
			try_reap(r);
		else if (r->pid_fd < 0)
			try_reap(r);
	}
}

static int open_pidfd(pid_t pid)
{
#ifdef SYS_pidfd_open
	long fd = syscall(SYS_pidfd_open, pid, 0);

	return fd < 0 ? -1 : (int)fd;
#else
	return -1;
#endif
}

/* The exec report from the child: 0 when it exec'd, else the stage and errno. */
static int read_exec_report(int fd, int *stage, int *e)
{
	int msg[2];
	size_t got = 0;

	while (got < sizeof(msg)) {
		ssize_t n = read(fd, (char *)msg + got, sizeof(msg) - got);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		got += (size_t)n;
	}
	if (got < sizeof(msg))
		return 0;
	*stage = msg[0];
	*e = msg[1];
	return -1;
}

static int exec_error(const struct gdn_proc *p, int stage, int e, struct gdn_err *err)
{
	int code = e == ENOENT ? GDN_ENOTFOUND : GDN_EIO;

	switch (stage) {
	case STAGE_CHDIR:
		return gdn_err_set(err, code, "cannot run '%s' in '%s': %s", p->argv[0], p->dir,
				   strerror(e));
	case STAGE_EXEC:
		return gdn_err_set(err, code, "cannot run '%s': %s", p->argv[0], strerror(e));
	default:
		return gdn_err_set(err, GDN_EIO, "cannot start '%s': %s", p->argv[0], strerror(e));
	}
}

static void reset_results(struct gdn_proc *p)
{
	p->pid = 0;
	p->status_kind = GDN_PROC_NOT_RUN;
	p->code = 0;
	p->signo = 0;
	p->stop_signal = 0;
	p->duration_ms = 0;
	p->out_truncated = false;
	sbuf_reset(&p->out);
}

static int check_request(const struct gdn_proc *p, struct gdn_err *err)
{
	if (!p->argv || !p->argv[0] || !*p->argv[0])
		return gdn_err_set(err, GDN_EUSAGE, "no program to run (empty argv)");
	if (p->inherit_output && (p->capture || p->on_line || p->idle_timeout_ms > 0))
		return gdn_err_set(err, GDN_EUSAGE,
				   "cannot capture, stream or watch the output of '%s' for "
				   "idleness when it goes straight to the terminal",
				   p->argv[0]);
	return 0;
}

int gdn_proc_run(struct gdn_proc *p, struct gdn_err *err)
{
	struct run r = {.p = p, .out_fd = -1, .in_fd = -1, .pid_fd = -1, .line = SBUF_INIT};
	struct strvec envv = STRVEC_INIT, cands = STRVEC_INIT;
	struct child_plan cp = {.in_fd = -1, .out_fd = -1, .err_fd = -1};
	int errp[2] = {-1, -1}, outp[2] = {-1, -1}, inp[2] = {-1, -1};
	char **sh_argv = NULL;
	sigset_t all, old;
	int slot = -1, ret, stage = 0, e = 0;
	size_t argc, i;
	pid_t pid;

	/* Before anything else, so a signal from here on stops this run. */
	r.sig_seen = p->stop_on_any_signal ? 0 : sig_count;
	r.gen_seen = stop_generation();
	pthread_once(&wake_once, wake_init);
	reset_results(p);
	ret = check_request(p, err);
	if (ret)
		return ret;
	slot = live_reserve(p->kill_grace_ms > 0 ? p->kill_grace_ms : DEFAULT_GRACE_MS);
	if (slot < 0)
		return gdn_err_set(err, GDN_EIO, "cannot run '%s': more than %d children at once",
				   p->argv[0], PROC_MAX_LIVE);

	r.grace = p->kill_grace_ms > 0 ? p->kill_grace_ms : DEFAULT_GRACE_MS;
	build_env(&envv, p->env);
	build_candidates(&cands, p->argv[0], &envv);
	for (argc = 0; p->argv[argc]; argc++)
		;
	sh_argv = xcalloc(argc + 2, sizeof(*sh_argv));
	sh_argv[0] = (char *)"/bin/sh";
	for (i = 1; i < argc; i++)
		sh_argv[i + 1] = (char *)p->argv[i];

	if (pipe_cloexec(errp) || (!p->inherit_output && pipe_cloexec(outp)) ||
	    (p->stdin_text && pipe_cloexec(inp))) {
		ret = gdn_err_errno(err, GDN_EIO, "cannot run '%s': cannot create a pipe",
				    p->argv[0]);
		goto out;
	}
	if (!p->stdin_text) {
		inp[0] = fd_above_stdio(open("/dev/null", O_RDONLY | O_CLOEXEC));
		if (inp[0] < 0) {
			ret = gdn_err_errno(err, GDN_EIO, "cannot open '/dev/null'");
			goto out;
		}
	}
	if ((outp[0] >= 0 && fcntl(outp[0], F_SETFL, O_NONBLOCK) < 0) ||
	    (inp[1] >= 0 && fcntl(inp[1], F_SETFL, O_NONBLOCK) < 0)) {
		ret = gdn_err_errno(err, GDN_EIO, "cannot run '%s': fcntl", p->argv[0]);
		goto out;
	}
	cp.cands = cands.v;
	cp.argv = (char *const *)p->argv;
	cp.sh_argv = sh_argv;
	cp.envp = (char *const *)envv.v;
	cp.dir = p->dir;
	cp.in_fd = inp[0];
	cp.out_fd = outp[1];
	cp.err_fd = errp[1];

	if (trace_enabled())
		trace_spawn(p);

	/* No handler of ours may run in the child before it resets them. */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	r.start = gdn_now_ms();
	r.next_tick = r.start + p->tick_ms;
	pid = start_child(&cp);
	e = errno;
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (pid < 0) {
		errno = e;
		ret = gdn_err_errno(err, GDN_EIO, "cannot run '%s': vfork", p->argv[0]);
		goto out;
	}
	p->pid = pid;
	r.pgid = pid;
	setpgid(pid, pid); /* also in the child; EACCES once it has exec'd is fine */
	live_set(slot, pid);
	close_fd(&errp[1]);
	close_fd(&outp[1]);
	close_fd(&inp[0]);

	if (read_exec_report(errp[0], &stage, &e)) {
		while (waitpid(pid, &r.wstatus, 0) < 0 && errno == EINTR)
			;
		p->pid = 0;
		ret = exec_error(p, stage, e, err);
		goto out;
	}

	if (p->on_spawn)
		p->on_spawn(pid, p->payload);
	r.out_fd = outp[0];
	outp[0] = -1;
	r.in_fd = inp[1];
	inp[1] = -1;
	r.in_len = p->stdin_text ? (p->stdin_len ? p->stdin_len : strlen(p->stdin_text)) : 0;
	if (r.in_fd >= 0 && !r.in_len)
		close_fd(&r.in_fd);
	r.pid_fd = open_pidfd(pid);
	r.last_out = r.start;
	pump(&r);

	p->duration_ms = gdn_now_ms() - r.start;
	if (WIFEXITED(r.wstatus))
		p->code = WEXITSTATUS(r.wstatus);
	else if (WIFSIGNALED(r.wstatus))
		p->signo = WTERMSIG(r.wstatus);
	if (r.reason)
		p->status_kind = r.reason;
	else if (WIFSIGNALED(r.wstatus))
		p->status_kind = GDN_PROC_SIGNALED;
	else
		p->status_kind = GDN_PROC_EXITED;
out:
	close_fd(&errp[0]);
	close_fd(&errp[1]);
	close_fd(&outp[0]);
	close_fd(&outp[1]);
	close_fd(&inp[0]);
	close_fd(&inp[1]);
	close_fd(&r.out_fd);
	close_fd(&r.in_fd);
	close_fd(&r.pid_fd);
	sbuf_release(&r.line);
	live_release(slot);
	strvec_clear(&envv);
	strvec_clear(&cands);
	free(sh_argv);
	return ret;
}

int gdn_proc_exit_code(const struct gdn_proc *p)
{
	switch (p->status_kind) {
	case GDN_PROC_EXITED:
		return p->code;
	case GDN_PROC_SIGNALED:
		return 128 + p->signo;
	case GDN_PROC_TIMEOUT:
	case GDN_PROC_IDLE:
		return 124;
	case GDN_PROC_STOPPED:
		return 128 + (p->stop_signal ? p->stop_signal : SIGINT);
	case GDN_PROC_NOT_RUN:
		break;
	}
	return 127;
}

void gdn_proc_release(struct gdn_proc *p)
{
	sbuf_release(&p->out);
}

/* ---- a function in a forked child (the loop's workers) ---- */

int gdn_proc_fork_fn(int (*fn)(void *payload), void *payload, pid_t *pid, struct gdn_err *err)
{
	pid_t parent = getpid(), p;
	int code;

	pthread_once(&wake_once, wake_init);
	fflush(NULL); /* nothing buffered is written twice */
	pthread_mutex_lock(&live_lock);
	p = fork();
	if (p) {
		pthread_mutex_unlock(&live_lock);
		if (p < 0)
			return gdn_err_errno(err, GDN_EIO, "cannot fork a worker");
		*pid = p;
		return 0;
	}
	/* the child: the parent's live groups (holds) and wake-ups are not its own */
	memset(live, 0, sizeof(live));
	live_nr = 0;
	pthread_mutex_unlock(&live_lock);
	for (int i = 0; i < 2; i++) {
		if (wake_pipe[i] >= 0)
			close(wake_pipe[i]);
		if (sig_pipe[i] >= 0)
			close(sig_pipe[i]);
	}
	wake_init();
	gdn_lock_drop_inherited();
#if defined(__linux__) && defined(PR_SET_PDEATHSIG)
	/* the coordinator killed (kill -9): stop as on Ctrl-C, never work on unseen */
	prctl(PR_SET_PDEATHSIG, SIGTERM, 0, 0, 0);
#endif
	if (getppid() != parent)
		_exit(128 + SIGTERM);
	gdn_proc_set_subreaper();
	code = fn(payload);
	fflush(NULL);
	_exit(code & 0xff);
}

int gdn_proc_fork_poll(pid_t pid, int *code)
{
	int status = 0;
	pid_t r = waitpid(pid, &status, WNOHANG);

	if (r == 0 || (r < 0 && errno == EINTR))
		return 0;
	if (r < 0) {
		*code = 128 + SIGKILL; /* not ours any more: reaped elsewhere */
		return 1;
	}
	*code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
	return 1;
}

void gdn_proc_fork_wait(const pid_t *pids, size_t n, long ms)
{
	struct pollfd *pfd = xcalloc(n ? n : 1, sizeof(*pfd));
	size_t k = 0;

	for (size_t i = 0; i < n; i++) {
		if (pids[i] <= 0)
			continue;
		pfd[k].fd = open_pidfd(pids[i]);
		pfd[k].events = POLLIN;
		if (pfd[k++].fd < 0) {
			k--;
			ms = ms < REAP_TICK_MS ? ms : REAP_TICK_MS; /* no pidfd: poll for it */
		}
	}
	/* a signal (EINTR) ends the wait as well */
	poll(pfd, k, ms > INT_MAX ? INT_MAX : (int)ms);
	for (size_t i = 0; i < k; i++)
		close(pfd[i].fd);
	free(pfd);
}

void gdn_proc_fork_signal(pid_t pid, int sig)
{
	if (pid > 1)
		kill(pid, sig);
}
