// Wires the page together: the header (traces, progress, errors), the
// timeline, the event list and the side panel, and `window.reefView` for
// tests and benchmarks.

import { Activities, ActivitiesTab, DefinitionsPanel } from './activity';
import { AnalysesPanel } from './analyses';
import { getEvents, getInfo, getRows, requestsInFlight, onRequestDone, type Activity, type Info } from './api';
import { byId, formatCount, formatDuration, originTimeOfDay } from './format';
import { EventList } from './list';
import { FiltersPanel, SearchPanel, StatsPanel } from './panels';
import { State } from './state';
import { Timeline } from './timeline';
import { readUrlState, writeUrlState } from './urlstate';

const INFO_POLL_MS = 300;
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
    viewChanged: () => {
      stats.schedule();
      analyses.rangeChanged();
      actsTab.schedule();
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
  updateButtons();
  timeline.invalidate();
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

function showHeader(info: Info): void {
  arrowsBtn.hidden = !info.kernel;
  byId('tab-analyses').hidden = !info.kernel;
  byId('traces').textContent = info.traces.map((t) => t.name).join(', ');
  byId('traces').title = info.traces.map((t) => t.path).join('\n');
  byId('summary').textContent = `${formatCount(info.events)} events · ${formatDuration(info.end)}${info.kernel ? ' · kernel' : ''}`;
  const building = info.state === 'building';
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
  }
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

async function pollInfo(): Promise<void> {
  infoBusy = true;
  try {
    const info = await getInfo();
    const prev = state.info;
    state.info = info;
    showHeader(info);
    // While the index grows, what is drawn is refreshed about once a
    // second (not at every poll: the queries would slow the indexing down).
    const changed = !prev || prev.events !== info.events || prev.end !== info.end || prev.state !== info.state;
    const now = performance.now();
    stale = stale || changed;
    const grew = stale && (info.state !== 'building' || !prev || prev.state !== info.state || now - lastRefresh >= REFRESH_MS);
    if (grew) {
      lastRefresh = now;
      stale = false;
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
      if (state.filterId === null) list.setTotal(info.events);
      else list.reset(true);
      stats.schedule();
      if (prev && prev.state !== info.state) analyses.setShown(!byId('analyses').hidden);
    }
    if (!prev) {
      restoreUrl();
      timeline.startHistory();
    }
    // The activities the URL defines, once the index is built (they need it).
    if (info.state !== 'building' && !urlActivities) {
      urlActivities = true;
      void acts.loadFromUrl();
    }
    if (info.state === 'building') setTimeout(() => void pollInfo(), INFO_POLL_MS);
  } catch (e) {
    errorBox.hidden = false;
    byId('error-text').textContent = `cannot reach the server: ${e instanceof Error ? e.message : String(e)}`;
    setTimeout(() => void pollInfo(), 2000);
  } finally {
    infoBusy = false;
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
    actsTab.busy()
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
  rowClientY: (id: number, part: 'bar' | 'mark' = 'bar') => timeline.rowClientY(id, part),
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
  /** Opens a tab under the timeline: 'events', 'activities' or 'analyses'. */
  showTab: (name: 'events' | 'activities' | 'analyses') => showTab(byId(`tab-${name}`)),
  /** The CPU usage chart's data: per CPU, busy ns per bucket from bucket j0 at res. */
  cpuUsage: () => analyses.usage,
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
