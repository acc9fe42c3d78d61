// Wires the page together: the header (traces, progress, errors), the
// timeline, the event list and the side panel, and `window.reefView` for
// tests and benchmarks.

import { Activities, ActivitiesTab, DefinitionsPanel } from './activity';
import { AnalysesPanel } from './analyses';
import { FlameTab } from './flame';
import {
  getEvents,
  getInfo,
  getRows,
  liveSocket,
  requestsInFlight,
  onRequestDone,
  type Activity,
  type Info,
  type LiveStatus,
} from './api';
import { byId, formatBytes, formatCount, formatDuration, originTimeOfDay } from './format';
import { EventList } from './list';
import { FiltersPanel, SearchPanel, StatsPanel } from './panels';
import { State } from './state';
import { Timeline } from './timeline';
import { readUrlState, writeUrlState } from './urlstate';

const INFO_POLL_MS = 300;
/** A live trace's refresh period. */
const LIVE_REFRESH_MS = 200;
/** While indexing, how often what is shown is refreshed. */
const REFRESH_MS = 1000;
let lastRefresh = 0;
/** The index changed since what is shown was last refreshed. */
let stale = false;

/** What the URL said is restored (before, the page's defaults would overwrite it). */
let urlRestored = false;
let urlTimer: number | null = null;

const state = new State();
const tooltip = byId('tooltip');
const errorBox = byId('error');
const progress = byId('progress');
const progressBar = byId('progress-bar');
const progressText = byId('progress-text');

let list: EventList;
const stats = new StatsPanel(byId('stats'), state);
const analyses = new AnalysesPanel(byId('analyses'), state, (a) => showInterval(a));
const acts = new Activities(state);
const flame = new FlameTab(byId('flame-panel'), state);

const timeline = new Timeline(
  byId<HTMLCanvasElement>('timeline'),
  byId('timeline-scroll'),
  byId('timeline-spacer'),
  tooltip,
  state,
  {
    markClicked: (ev) => {
      void list.selectEvent(ev);
    },
    followChanged: () => updateButtons(),
    viewChanged: () => {
      stats.schedule();
      analyses.rangeChanged();
      actsTab.schedule();
      flame.schedule();
      saveUrl();
      updateButtons();
    },
  },
);

list = new EventList(byId('event-list'), state, {
  selected: (s) => timeline.centerOn(s.t),
});

acts.redraw = () => timeline.invalidate();
timeline.setOverlay(acts);
const actsPanel = new DefinitionsPanel(byId('act-panel'), acts);
/** An activity or period picked in a list or a plot: selected, and in view with some room. */
function showInterval(a: Activity): void {
  const pad = Math.max((a.end - a.begin) / 2, 1000);
  timeline.setView(Math.max(0, a.begin - pad), a.end + pad);
  state.setRange({ from: a.begin, to: a.end + 1 });
}
const actsTab = new ActivitiesTab(byId('activities'), acts, state, showInterval);
const messagesBtn = byId<HTMLButtonElement>('toggle-messages');
acts.onChange(() => {
  messagesBtn.hidden = acts.defs.length === 0;
  timeline.overlayChanged();
});
messagesBtn.addEventListener('click', () => {
  acts.setMessages(!acts.messagesOn);
  messagesBtn.setAttribute('aria-pressed', String(acts.messagesOn));
  messagesBtn.textContent = acts.messagesOn ? 'Hide messages' : 'Show messages';
  messagesBtn.blur();
});

const filters = new FiltersPanel(byId('filters'), state, {
  rowsHidden: () => timeline.setRows(),
  filterChanged: () => {
    state.emit('filter');
  },
});

const searchPanel = new SearchPanel(state, {
  found: async (hit) => {
    await list.selectEvent(hit);
    timeline.centerOn(hit.t);
  },
});

state.on('filter', () => {
  saveUrl();
  timeline.filterChanged();
  const sel = state.selected;
  list.reset(false);
  if (sel) void list.relocate(sel);
  stats.schedule();
});
state.on('selection', () => {
  timeline.invalidate();
  list.refresh();
});
state.on('range', () => {
  saveUrl();
  stats.schedule();
  analyses.rangeChanged();
  actsTab.schedule();
  flame.schedule();
  updateButtons();
  timeline.rangeChanged();
});

// --- Toolbar ----------------------------------------------------------------------------

const btn = (id: string, f: () => void): HTMLButtonElement => {
  const b = byId<HTMLButtonElement>(id);
  b.addEventListener('click', () => {
    f();
    b.blur();
  });
  return b;
};
const backBtn = btn('back', () => timeline.back());
const fwdBtn = btn('forward', () => timeline.forward());
btn('reset', () => timeline.reset());
btn('zoom-in', () => timeline.zoom(1 / 1.5));
btn('zoom-out', () => timeline.zoom(1.5));
const selBtn = btn('zoom-selection', () => timeline.zoomToSelection());
const followBtn = btn('follow', () => {
  timeline.setFollowNewest(!timeline.isFollowingNewest());
  updateButtons();
});
btn('clear-selection', () => state.setRange(null));
const arrowsBtn = btn('toggle-arrows', () => {
  timeline.setArrowsVisible(!timeline.arrowsVisible());
  arrowsBtn.setAttribute('aria-pressed', String(timeline.arrowsVisible()));
  arrowsBtn.textContent = timeline.arrowsVisible() ? 'Hide wakeups' : 'Show wakeups';
});

function updateButtons(): void {
  backBtn.disabled = !timeline.canGoBack();
  fwdBtn.disabled = !timeline.canGoForward();
  selBtn.disabled = !state.range;
  followBtn.setAttribute('aria-pressed', String(timeline.isFollowingNewest()));
  followBtn.textContent = timeline.isFollowingNewest() ? 'Following' : 'Follow';
  const r = state.range;
  byId('selection-info').textContent = r ? `selection: ${formatDuration(r.to - r.from)}` : '';
}

// --- The view's state in the URL (urlstate.ts) ------------------------------------------------

function saveUrl(): void {
  if (!urlRestored) return;
  if (urlTimer !== null) clearTimeout(urlTimer);
  urlTimer = window.setTimeout(() => {
    urlTimer = null;
    writeUrlState({
      view: timeline.view(),
      range: state.range,
      filter: state.filterId === null ? '' : filters.expression(),
      hideRows: [...state.hiddenRows],
      hideClasses: [...state.hiddenClasses],
    });
  }, 200);
}

/**
 * Applies the URL's view, selection and filter. The filter may take a
 * while to build: the page goes on meanwhile, and the URL is written
 * again only once it is in use.
 */
function restoreUrl(): void {
  const u = readUrlState();
  if (u.view) timeline.setView(u.view.from, u.view.to, false);
  if (u.range) state.setRange(u.range);
  if (u.filter || u.hideRows.length || u.hideClasses.length) {
    void filters.restore(u.filter, u.hideRows, u.hideClasses).finally(() => {
      urlRestored = true;
    });
  } else {
    urlRestored = true;
  }
}

// --- Export: the timeline as a PNG picture -----------------------------------------------------

btn('export-png', () => {
  timeline.canvasElement().toBlob((blob) => {
    if (!blob) return;
    const a = document.createElement('a');
    a.href = URL.createObjectURL(blob);
    const r = timeline.view();
    a.download = `reef-view-${Math.floor(r.from)}-${Math.ceil(r.to)}.png`;
    a.click();
    setTimeout(() => URL.revokeObjectURL(a.href), 10000);
  }, 'image/png');
});

// --- Tabs under the timeline: the event list, the analyses (kernel traces) ----------------

const tabs: [HTMLElement, HTMLElement][] = [
  [byId('tab-events'), byId('event-list')],
  [byId('tab-activities'), byId('activities')],
  [byId('tab-analyses'), byId('analyses')],
  [byId('tab-profile'), byId('flame-panel')],
];
function showTab(tab: HTMLElement): void {
  for (const [t, panel] of tabs) {
    const on = t === tab;
    t.setAttribute('aria-selected', String(on));
    panel.hidden = !on;
  }
  // The list's status line ("a–b of N events") belongs to the list.
  const status = document.querySelector<HTMLElement>('.list-status');
  if (status) status.hidden = tab.id !== 'tab-events';
  analyses.setShown(tab.id === 'tab-analyses');
  actsTab.setShown(tab.id === 'tab-activities');
  flame.setShown(tab.id === 'tab-profile');
}
for (const [t] of tabs) t.addEventListener('click', () => showTab(t));

// --- Info, rows, progress ---------------------------------------------------------------

let rowsCount = -1;
let rowsLoading = false;

async function loadRows(): Promise<void> {
  if (rowsLoading) return;
  rowsLoading = true;
  try {
    const rows = await getRows();
    rowsCount = rows.length;
    state.setRows(rows);
  } finally {
    rowsLoading = false;
  }
}

/** Samples, function entries or exits among the classes (the Profile tab's matter). */
function hasProfile(info: Info): boolean {
  return info.classes.some((c) => c === 'reef:sample' || c.endsWith(':func_entry'));
}

function showHeader(info: Info): void {
  arrowsBtn.hidden = !info.kernel;
  byId('tab-analyses').hidden = !info.kernel;
  byId('tab-profile').hidden = !hasProfile(info);
  byId('traces').textContent = info.traces.map((t) => t.name).join(', ');
  byId('traces').title = info.traces.map((t) => t.path).join('\n');
  byId('summary').textContent = `${formatCount(info.events)} events · ${formatDuration(info.end)}${info.kernel ? ' · kernel' : ''}`;
  showLive(info.live);
  const building = info.state === 'building' && !info.live;
  progress.hidden = !building;
  if (building) {
    const { done, total } = info.progress;
    const pct = total ? (100 * done) / total : 0;
    progressBar.style.width = `${pct.toFixed(1)}%`;
    progressText.textContent = `indexing ${formatCount(done)} / ${formatCount(total)} (${pct.toFixed(0)}%)`;
  }
  if (info.state === 'error' && info.error) {
    errorBox.hidden = false;
    byId('error-text').textContent = info.error;
  } else if (info.live?.state === 'failed' && !liveFailShown) {
    // Once: the banner can be dismissed, the header keeps saying it.
    liveFailShown = true;
    errorBox.hidden = false;
    byId('error-text').textContent = `the live session stopped: ${info.live.message ?? 'the relay is gone'}; the events received are shown`;
  }
}

let liveFailShown = false;

/** A live trace's connection, in the header. */
function showLive(l: LiveStatus | undefined): void {
  const el = byId('live');
  el.hidden = !l;
  if (!l) return;
  const got = `${formatCount(l.packets)} packets · ${formatBytes(l.bytes)} · ${l.streams} streams`;
  const lag =
    l.received_to !== null && l.indexed_to !== null && l.received_to > l.indexed_to
      ? ` · index ${formatDuration(l.received_to - l.indexed_to)} behind`
      : '';
  let text: string;
  let cls: string;
  switch (l.state) {
    case 'receiving':
      text = `● live from ${l.addr}${l.connections > 1 ? ` (reconnected ×${l.connections - 1})` : ''} · ${got}${lag}`;
      cls = 'receiving';
      break;
    case 'dropped':
      text = `connection to ${l.addr} dropped${l.message ? ` (${l.message})` : ''}: reconnecting… · ${got}`;
      cls = 'dropped';
      break;
    case 'failed':
      text = `relay ${l.addr} lost${l.message ? ` (${l.message})` : ''}: showing what was received${l.reindexing ? ', indexing it again…' : ''} · ${got}`;
      cls = 'dropped';
      break;
    default:
      text = `${l.source === 'lttng-live' ? 'session' : 'program'} ended${l.reindexing ? ': indexing the whole trace again…' : ''} · ${got}`;
      cls = 'ended';
  }
  el.textContent = text;
  el.className = cls;
  el.title = `received into ${l.dir}${l.kept ? '' : ' (removed when reef view exits)'}`;
}

let infoBusy = false;
let urlActivities = false;
let originKnown = false;

/**
 * The origin's time of day as the list shows it (the server's time zone):
 * read from the first event's line, `[HH:MM:SS.nnnnnnnnn] ...`.
 */
async function learnOrigin(): Promise<void> {
  const a = await getEvents(0, 1, 0, false, null);
  const e = a.events[0];
  if (!e) return;
  state.originTod = originTimeOfDay(e.line, state.info?.origin_ns ?? null) - e.t;
  originKnown = true;
  timeline.invalidate();
}

/** Reads /api/info, and again every INFO_POLL_MS while the index grows (unless the server pushes it). */
async function pollInfo(): Promise<void> {
  infoBusy = true;
  try {
    // Applied in turn with what the WebSocket pushes.
    pushed = await getInfo();
    await drainPushed();
    if (state.info?.state === 'building' && !socketOpen) setTimeout(() => void pollInfo(), INFO_POLL_MS);
  } catch (e) {
    errorBox.hidden = false;
    byId('error-text').textContent = `cannot reach the server: ${e instanceof Error ? e.message : String(e)}`;
    setTimeout(() => void pollInfo(), 2000);
  } finally {
    infoBusy = false;
  }
}

/** A live trace: the server pushes /api/info over a WebSocket as it changes. */
let socketOpen = false;
let pushed: Info | null = null;
let applying = false;

function openLiveSocket(): void {
  if (socketOpen || typeof WebSocket === 'undefined') return;
  const ws = liveSocket();
  socketOpen = true;
  ws.onmessage = (e) => {
    try {
      pushed = JSON.parse(String(e.data)) as Info;
    } catch {
      return;
    }
    void drainPushed();
  };
  ws.onclose = () => {
    socketOpen = false;
    // Polled again, and the socket reopened while the trace still grows.
    if (state.info?.state === 'building') {
      setTimeout(() => {
        void pollInfo();
        openLiveSocket();
      }, 1000);
    }
  };
}

let refreshTimer: number | null = null;

/** Applies `info` again (a refresh that came due), after what is being applied. */
async function applyQueued(info: Info): Promise<void> {
  pushed = pushed ?? info;
  await drainPushed();
}

/** Applies the newest pushed answer, one at a time. */
async function drainPushed(): Promise<void> {
  if (applying) return;
  applying = true;
  infoBusy = true;
  try {
    while (pushed) {
      const info = pushed;
      pushed = null;
      await applyInfo(info);
    }
  } catch (e) {
    errorBox.hidden = false;
    byId('error-text').textContent = `cannot reach the server: ${e instanceof Error ? e.message : String(e)}`;
  } finally {
    applying = false;
    infoBusy = false;
  }
}

async function applyInfo(info: Info): Promise<void> {
  const prev = state.info;
  const newEpoch = prev !== null && prev.epoch !== info.epoch;
  state.info = info;
  showHeader(info);
  // While the index grows, what is drawn is refreshed about once a second
  // (not at every poll: the queries would slow the indexing down); a live
  // trace's, five times a second.
  const changed = !prev || prev.events !== info.events || prev.end !== info.end || prev.state !== info.state || newEpoch;
  const now = performance.now();
  stale = stale || changed;
  const every = info.live ? LIVE_REFRESH_MS : REFRESH_MS;
  const grew =
    stale && (info.state !== 'building' || !prev || prev.state !== info.state || newEpoch || now - lastRefresh >= every);
  if (grew) {
    lastRefresh = now;
    stale = false;
  } else if (stale && refreshTimer === null) {
    // Nothing newer may come for a while: refresh when it is time.
    refreshTimer = window.setTimeout(
      () => {
        refreshTimer = null;
        if (stale && state.info) void applyQueued(state.info);
      },
      Math.max(0, lastRefresh + every - now),
    );
  }
  if (newEpoch) {
    // The server indexed the trace again (a live trace that ended): the
    // origin, rows and lists are read again.
    originKnown = false;
    rowsCount = -1;
  }
  if (!originKnown && info.events > 0) await learnOrigin();
  if (info.rows !== rowsCount || (prev && prev.state !== info.state)) await loadRows();
  if (!prev || prev.classes.length !== info.classes.length) filters.update();
  if (grew) {
    if (prev) state.generation++;
    timeline.dataChanged();
    // The list only grows at its end (the index is built in time order):
    // what is cached stays; the total tells the list to fetch the rest.
    list.setEnd(info.end);
    if (newEpoch) {
      list.reset(true);
      if (state.filterId !== null) void filters.apply();
    } else if (state.filterId === null) list.setTotal(info.events);
    else list.reset(true);
    stats.schedule();
    if (prev && prev.state !== info.state) analyses.setShown(!byId('analyses').hidden);
  }
  if (!prev) {
    restoreUrl();
    timeline.startHistory();
    if (info.live) {
      followBtn.hidden = false;
      if (info.state === 'building' && !window.location.hash.includes('v=')) timeline.setFollowNewest(true, null);
      updateButtons();
      openLiveSocket();
    }
  }
  // The activities the URL defines, once the index is built (they need it).
  if (info.state !== 'building' && !urlActivities) {
    urlActivities = true;
    void acts.loadFromUrl();
  }
}

state.on('rows', () => {
  timeline.setRows();
  filters.update();
});

byId('error-close').addEventListener('click', () => {
  errorBox.hidden = true;
});

// --- For tests and benchmarks -------------------------------------------------------------

let settledSince = 0;

function busy(): boolean {
  return (
    infoBusy ||
    rowsLoading ||
    requestsInFlight() > 0 ||
    !timeline.isReady() ||
    list.busy() ||
    filters.busy() ||
    searchPanel.busy() ||
    stats.busy() ||
    analyses.busy() ||
    urlTimer !== null ||
    actsPanel.busy() ||
    actsTab.busy() ||
    flame.busy()
  );
}

onRequestDone(() => {
  settledSince = performance.now();
});

const reefView = {
  /** The visible range, ns from the origin. */
  view: () => timeline.view(),
  /** Sets the visible range. */
  setView: (from: number, to: number) => timeline.setView(from, to),
  /** Ids of the rows on screen. */
  rows: () => timeline.visibleRows(),
  /** No request in flight or due, everything drawn. */
  ready: () => state.info !== null && !busy() && performance.now() - settledSince > 30,
  /** Durations (ms) of the last frames drawn. */
  frameTimes: () => timeline.frameTimes(),
  /** The server's /api/info as last read. */
  info: () => state.info,
  /** Client coordinates of time t on the timeline. */
  timeToClientX: (t: number) => timeline.timeToClientX(t),
  /** Client y of a row's bar or marks (scrolling it into view), or null. */
  rowClientY: (id: number, part: 'bar' | 'mark' | 'sample' = 'bar') => timeline.rowClientY(id, part),
  /** All rows as /api/rows gives them. */
  allRows: () => state.rows,
  /** The selected event. */
  selected: () => state.selected,
  /** The range selection. */
  range: () => state.range,
  setRange: (from: number, to: number) => state.setRange({ from, to }),
  /** Exact event counts per row id in the range selection (null until known). */
  rangeCounts: () => timeline.rangeCountsNow(),
  /** The level the timeline is drawn at: { k, res }. */
  level: () => timeline.levelNow(),
  /** The wakeup arrows drawn. */
  arrows: () => timeline.arrowsNow(),
  filterId: () => state.filterId,
  /** Opens a tab under the timeline: 'events', 'activities', 'analyses' or 'profile'. */
  showTab: (name: 'events' | 'activities' | 'analyses' | 'profile') => showTab(byId(`tab-${name}`)),
  /** The Profile tab's frames as drawn (client coordinates) and its answer; `profileRow(id)` chooses its row (null: all). */
  flameFrames: () => flame.drawnNow(),
  flameAnswer: () => flame.answerNow(),
  profileRow: (id: number | null) => flame.setRow(id),
  /** Sample ticks drawn per row: [{row, x, count}] in client coordinates. */
  sampleTicks: () => timeline.sampleTicksNow(),
  /** The CPU usage chart's data: per CPU, busy ns per bucket from bucket j0 at res. */
  cpuUsage: () => analyses.usage,
  /** Live: when each newer end of the trace was first on screen (wall ms, ns from the origin). */
  drawnEnds: () => timeline.drawnEnds(),
  /** Live: turns follow mode on or off. */
  follow: (on: boolean) => {
    timeline.setFollowNewest(on);
    updateButtons();
  },
  /** The latency scatter plot's points: their periods and client coordinates. */
  latencyPoints: () => analyses.pointsNow(),
  /** The activities drawn: slices (row, stacking level) and arrows. */
  activities: () => acts.drawnNow(timeline.clientGeometry()),
};

declare global {
  interface Window {
    reefView: typeof reefView;
  }
}
Object.defineProperty(window, 'reefView', { value: Object.freeze(reefView), writable: false });

updateButtons();
void pollInfo();
